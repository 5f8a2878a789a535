"""`MultiJoin`: the n-way sliding-window join operator of one query (Golab & Özsu, sections 3-4).

Contract (what happens when):
- `add` (a record arrives): the record is checked against the watermark as it stands (late records
  are counted and not joined), filtered, and put in a reorder buffer. Nothing is joined yet.
- `advance` (a timer, or after a batch of records): every buffered record the watermark passed is
  *released* in timestamp order. Released records enter their windows and, under
  eager evaluation, are joined at once; under lazy evaluation they are joined as one batch each time
  the watermark crosses a multiple of tau. Expiration is eager (before every probe) or lazy (every tau).
  While every input partition is idle (`set_idle`), `advance` releases and joins everything held,
  as `finish` does, but new records may follow (the idle flush, see `Clock`).
- `finish` (end of input): everything buffered is released and joined.
- `set_plan` switches the join order; it takes effect for the next record or batch joined.
Releasing in timestamp order is what makes count windows and out-of-order input (within `lateness`)
exact, and emitting each result from its last-released member is what makes it exactly once for
every order, mode and batch boundary.

`MultiJoin` is a facade: it builds the parts once, from the query, and hands every call to them.
`Clock` (watermark, reorder buffer, late records), `JoinAlgorithm` (hash or nested loops),
`Admission` (the window model), `Schedule` and `Expiration` (when to join and to clean; under a
memory budget, `ShedSchedule` with the query's shedding policy), and `JoinRunner` (windows and
compiled programs). See docs/engine.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from streamjoin.engine.admission import Holding, WindowRuntime, admission_for
from streamjoin.engine.algorithm import algorithm_for
from streamjoin.engine.checkpoint import EngineDelta, IncompleteCheckpointError, Journal, missing_scalars
from streamjoin.engine.clock import Clock, InputSlot
from streamjoin.engine.edges import closed_edges
from streamjoin.engine.entry import Entry
from streamjoin.engine.join import JoinRunner, Result
from streamjoin.engine.plan import JoinPlan
from streamjoin.engine.program import compile_filters
from streamjoin.engine.schedule import EXPIRATIONS, SCHEDULES, EmitterRun, Progress, Schedule, epoch
from streamjoin.engine.shedding import ShedSchedule
from streamjoin.engine.stats import WindowStats
from streamjoin.engine.window import StoreFactory, memory_store
from streamjoin.query.model import QueryDef

__all__ = ["MultiJoin", "Result", "default_plan"]

_T = TypeVar("_T")


def default_plan(query: QueryDef) -> JoinPlan:
    """Return the plan to start with before any statistics: the written order, joined-graph first.

    With order "auto" each origin visits the streams connected to what is already bound first
    (breadth-first over the join graph, ties in query order), so no window is scanned for lack of
    an equality; the planner replaces this as soon as it has statistics.
    """
    names = query.stream_names
    if query.order != "auto":
        return JoinPlan.from_global(query.order)
    neighbours: dict[str, set[str]] = {s: set() for s in names}
    for e in closed_edges(query):
        if e.op == "=":
            neighbours[e.left].add(e.right)
            neighbours[e.right].add(e.left)
    local: dict[str, tuple[str, ...]] = {}
    for origin in names:
        order = [origin]
        while len(order) < len(names):
            placed = set(order)
            nxt = next((s for s in names if s not in placed and neighbours[s] & placed), None)
            order.append(nxt if nxt is not None else next(s for s in names if s not in placed))
        local[origin] = tuple(order)
    return JoinPlan(local[names[0]], local, None, "default: join graph in query order")


def _registered(registry: Mapping[str, _T], mode: str, what: str) -> _T:
    """Return the strategy registered for `mode`, or raise ValueError naming the known ones."""
    try:
        return registry[mode]
    except KeyError:
        raise ValueError(
            f"{what} mode {mode!r} is not supported by the engine; known: {sorted(registry)}"
        ) from None


class MultiJoin:
    """Run one query's multi-way join over records fed in arrival order."""

    def __init__(
        self,
        query: QueryDef,
        plan: JoinPlan | None = None,
        *,
        partitions: Mapping[str, Iterable[int]] | None = None,
        store_factory: StoreFactory = memory_store,
        buckets: Mapping[str, int] | None = None,
        journal: bool = False,
    ) -> None:
        """Build the operator: every strategy is chosen here, once."""
        self.query = query
        self._names = query.stream_names
        filters = compile_filters(query)
        admission = admission_for(query)
        schedule_kind: type[Schedule] = (
            ShedSchedule  # load shedding: its own eager schedule (engine/shedding.py)
            if query.shedding is not None
            else _registered(SCHEDULES, query.evaluation.mode, "evaluation")
        )
        expiration = _registered(EXPIRATIONS, query.expiration.mode, "expiration")(query)
        self._lazy_eval = schedule_kind.lazy
        holding = Holding(
            expired=schedule_kind.lazy or expiration.holds_expired, exact_counts=not schedule_kind.lazy
        )
        self._runner = JoinRunner(
            query,
            algorithm_for(query),
            admission,
            holding,
            filters,
            lambda d, f, b: expiration.store(store_factory(d, f, b)),
            dict(buckets or {}),
        )
        self.windows: dict[str, WindowRuntime] = self._runner.windows
        self._tables = self._runner.tables
        self._journal: Journal | None = Journal() if journal else None
        if self._journal is not None:
            for table in self._tables:
                table.expired_log = self._journal.expired
        inputs: dict[str, InputSlot] = {
            inp.stream: (i, self._tables[i].stats, filters[inp.stream], admission.keeps_filtered(inp))
            for i, inp in enumerate(query.inputs)
        }
        self._clock = Clock(self._names, inputs, query.lateness, partitions, self._journal)
        # Shedding: a timestamp is one instant of the paper's model, released whole (strictly below).
        self._inclusive = admission.release_inclusive and query.shedding is None
        self._progress = Progress()
        self._schedule = schedule_kind(query, self._runner, expiration, self._progress)
        if self._journal is not None and isinstance(self._schedule, ShedSchedule):
            self._schedule.log_rewrites(self._journal.rewritten)
        self.plan_changes = 0
        self.plan = default_plan(query)
        self.set_plan(plan or self.plan)
        self.plan_changes = 0

    # -- plan -------------------------------------------------------------------------------

    def set_plan(self, plan: JoinPlan) -> None:
        """Switch to `plan` for every record joined from now on."""
        plan.validate(self._names)
        self._runner.compile(plan)
        if plan != self.plan:
            self.plan_changes += 1
        self.plan = plan

    def set_shedding_memory(self, memory: int) -> None:
        """Change the `shedding` budget (records over every window) from the next release on.

        Raises:
            ValueError: the query has no `shedding`, or `memory` gives a window less than one record.
        """
        if not isinstance(self._schedule, ShedSchedule):
            raise ValueError(f"query {self.query.name!r} has no shedding")
        self._schedule.set_memory(memory)

    # -- input ------------------------------------------------------------------------------

    @property
    def watermark(self) -> float:
        """Return the watermark: records below it are late (kept current by `add`)."""
        return self._clock.watermark

    def assign(self, stream: str, partitions: Iterable[int]) -> None:
        """Declare the partitions of `stream` this operator reads (each holds the watermark)."""
        self._clock.assign(stream, partitions)

    def set_idle(self, stream: str, partition: int, idle: bool = True) -> None:
        """Mark a partition idle (it stops holding the watermark back) or active again."""
        self._clock.set_idle(stream, partition, idle)

    def is_idle(self, stream: str, partition: int) -> bool:
        """Return True if `partition` of `stream` is idle. A record clears its own partition's flag,
        and the first arrival after every partition was idle clears them all."""
        return self._clock.is_idle(stream, partition)

    def observe(self, stream: str, partition: int, ts: float) -> None:
        """Move `partition` of `stream`'s clock to `ts` without a record (a progress marker)."""
        self._clock.observe(stream, partition, ts)

    def add(
        self,
        stream: str,
        record: Mapping[str, Any],
        *,
        ts: float,
        partition: int = 0,
        offset: int,
        size: int = 0,
        extra: Any = None,
    ) -> bool:
        """Buffer one arriving record; return False when it is late (counted, never joined).

        `extra` goes to `Entry.extra` untouched (the host's data about the record).
        """
        return self._clock.add(stream, record, ts, partition, offset, size, extra)

    # -- time -------------------------------------------------------------------------------

    def advance(self) -> list[Result]:
        """Release what the watermark allows, join it, and return the new results."""
        clock = self._clock
        # Closed (an idle flush): no record at the watermark can come any more, so it is released
        # too; every partition idle: a lazy batch is joined now rather than at the next epoch.
        return self._release(clock.watermark, inclusive=self._inclusive or clock.closed, flush=clock.all_idle)

    def finish(self) -> list[Result]:
        """End of input: release and join everything still buffered."""
        return self._release(math.inf, inclusive=True, flush=True)

    @property
    def result_runs(self) -> Sequence[EmitterRun]:
        """Return the runs of the last `advance`'s (or `finish`'s) results that one entry emitted:
        (start, end, entry), for a host that formats the entry's share of them once per run."""
        return self._schedule.runs

    def _release(self, watermark: float, *, inclusive: bool, flush: bool) -> list[Result]:
        released = self._clock.take_released(watermark, inclusive)
        results: list[Result] = []
        if released:
            self._progress.last_released_ts = released[-1].ts
            if self._journal is not None:
                self._journal.released.extend(released)
        self._schedule.release(released, watermark, flush, results)
        return results

    # -- checkpoints ------------------------------------------------------------------------

    def take_delta(self) -> EngineDelta:
        """Return what changed since the last call (needs `journal=True`): persist it atomically."""
        if self._journal is None:
            raise RuntimeError("MultiJoin(journal=True) is needed to take deltas")
        return self._journal.take(self._scalars())

    def _scalars(self) -> dict[str, Any]:
        progress = self._progress
        clock = self._clock.scalars()
        return {
            "next_seq": progress.next_seq,
            "watermark": clock["watermark"],
            "closed": clock["closed"],
            "last_released_ts": progress.last_released_ts,
            "last_joined_seq": progress.last_joined_seq,
            "lazy_evaluation": self._lazy_eval,
            "eval_epoch": progress.eval_epoch,
            "exp_epoch": progress.exp_epoch,
            "max_ts": clock["max_ts"],
            "idle": clock["idle"],
            "plan_changes": self.plan_changes,
        }

    def restore(self, entries: Iterable[Entry], scalars: Mapping[str, Any]) -> None:
        """Rebuild the state of a fresh operator from persisted entries and scalars.

        Entries with `seq > 0` were released: they go back into their windows in release order
        (count-window positions are renumbered, which keeps every membership test unchanged);
        entries with `seq <= 0` were still waiting for the watermark. Raise
        `IncompleteCheckpointError` (changing nothing) when `scalars` lack any of `REQUIRED_SCALARS`.
        """
        if missing := missing_scalars(scalars):
            raise IncompleteCheckpointError(f"checkpoint scalars lack {', '.join(missing)}")
        released = sorted((e for e in entries if e.seq > 0), key=lambda e: e.seq)
        waiting = sorted(
            (e for e in entries if e.seq <= 0), key=lambda e: (e.ts, e.input, e.partition, e.offset)
        )
        # Released but not joined yet: a lazy batch still waiting for its evaluation. The checkpoint
        # may come from the other evaluation mode (a control change restarts from it); eager
        # evaluation joins every record it releases. Checkpoints without the flag were written in
        # the current mode.
        written_lazy = bool(scalars.get("lazy_evaluation", self._lazy_eval))
        last_joined = int(scalars["last_joined_seq"]) if written_lazy else int(scalars["next_seq"]) - 1
        unjoined = [e for e in released if e.seq > last_joined]
        if not self._lazy_eval and unjoined:
            # Eager now: release them again (first, in release order), so each is joined on arrival.
            released = released[: len(released) - len(unjoined)]
            waiting = [*unjoined, *waiting]
        for entry in released:
            self._tables[entry.input].insert(entry)
        for entry in waiting:  # sorted: they count as arrived first, ahead of any new arrival
            entry.seq = -1
        self._clock.push_front(waiting)
        progress = self._progress
        progress.next_seq = int(scalars["next_seq"])
        progress.last_released_ts = float(scalars["last_released_ts"])
        progress.last_joined_seq = last_joined
        progress.eval_epoch = scalars["eval_epoch"]
        progress.exp_epoch = scalars["exp_epoch"]
        self._clock.restore(scalars)
        watermark = self._clock.watermark
        if self._lazy_eval and progress.eval_epoch is None and math.isfinite(watermark):
            # An eager checkpoint keeps no epoch (a control change switched the mode): count the
            # multiples of `every` from the watermark it reached, or its first batch would be joined
            # at once. (A new engine joins its first release: the watermark rose from -infinity.)
            progress.eval_epoch = epoch(watermark, self.query.evaluation.every)
        self.plan_changes = int(scalars.get("plan_changes", 0))
        if self._lazy_eval:
            progress.batch = unjoined
        if self._journal is not None:
            self._journal.take({})

    # -- statistics -------------------------------------------------------------------------

    @property
    def stats(self) -> dict[str, WindowStats]:
        """Return the live statistics of each input's window, by stream name."""
        for table in self._tables:
            table.stats.records = len(table)
            table.stats.distinct_keys = table.distinct_keys()
        return {s: self.windows[s].table.stats for s in self._names}

    @property
    def late(self) -> int:
        """Return the number of late records so far."""
        return sum(t.stats.late for t in self._tables)

    @property
    def buffered(self) -> int:
        """Return the number of records waiting for the watermark."""
        return len(self._clock.buffer) + len(self._progress.batch)
