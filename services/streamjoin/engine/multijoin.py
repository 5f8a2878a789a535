"""`MultiJoin`: the n-way sliding-window join operator of one query (Golab & Özsu, sections 3-4).

Contract (what happens when):
- `add` (a record arrives): the record is checked against the watermark as it stands (late records
  are counted and not joined), filtered, and put in a reorder buffer. Nothing is joined yet.
- `advance` (a timer, or after a batch of records): every buffered record the watermark passed is
  *released* in timestamp order. Released records enter their windows and, under
  eager evaluation, are joined at once; under lazy evaluation they are joined as one batch each time
  the watermark crosses a multiple of tau. Expiration is eager (before every probe) or lazy (every tau).
- `finish` (end of input): everything buffered is released and joined.
- `set_plan` switches the join order; it takes effect for the next record or batch joined.
Releasing in timestamp order is what makes count windows and out-of-order input (within `lateness`)
exact, and emitting each result from its last-released member is what makes it exactly once for
every order, mode and batch boundary. State lives in the window stores; see `window.py`.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from streamjoin.engine.checkpoint import EngineDelta, Journal
from streamjoin.engine.entry import Entry
from streamjoin.engine.execute import (
    CrossStep,
    ExactStep,
    WindowRuntime,
    run_cross_product,
    run_exact_cross,
    run_general,
    run_origin_first,
)
from streamjoin.engine.plan import JoinPlan
from streamjoin.engine.program import (
    Partial,
    Program,
    RecordFilter,
    closed_edges,
    compile_filters,
    compile_program,
    index_fields,
)
from streamjoin.engine.stats import WindowStats
from streamjoin.engine.window import StoreFactory, memory_store
from streamjoin.query.model import QueryDef, RangeWindow, RowsWindow

__all__ = ["MultiJoin", "Result", "default_plan"]

Result = Partial  # one entry per input, in query input order

_NEG_INF = -math.inf
_ts = attrgetter("ts")


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
        self.query = query
        self._names = query.stream_names
        self._index = {s: i for i, s in enumerate(self._names)}
        self._filters = compile_filters(query)
        buckets = dict(buckets or {})
        self._exact = {s: s not in buckets for s in self._names}
        self._lazy_eval = query.evaluation.mode == "lazy"
        self._lazy_exp = query.expiration.mode == "lazy"
        eager_both = not self._lazy_eval and not self._lazy_exp
        fields = index_fields(query) if query.algorithm == "hash" else {s: [] for s in self._names}
        self.windows: dict[str, WindowRuntime] = {}
        for inp in query.inputs:
            table = store_factory(inp, fields[inp.stream], buckets.get(inp.stream))
            is_range = isinstance(inp.window, RangeWindow)
            self.windows[inp.stream] = WindowRuntime(
                table=table,
                range=inp.window.range if isinstance(inp.window, RangeWindow) else None,
                rows=inp.window.rows if isinstance(inp.window, RowsWindow) else None,
                check_ts=is_range and not eager_both,
                check_member=not is_range and not eager_both,
                check_passes=not is_range and self._filters[inp.stream] is not None,
                exact_counts=not self._lazy_eval,
            )
        self._tables = [self.windows[s].table for s in self._names]
        self._rows_limit = [self.windows[s].rows for s in self._names]
        # Range windows release records at the watermark itself; count windows only strictly below,
        # since a later record with the same timestamp changes which records a count window holds.
        self._inclusive = all(isinstance(i.window, RangeWindow) for i in query.inputs)
        self._max_ts: dict[tuple[int, int], float | None] = {}
        self._idle: set[tuple[int, int]] = set()
        for stream, parts in (partitions or {s: [0] for s in self._names}).items():
            for p in parts:
                self._max_ts[(self._index[stream], p)] = None
        # Buffered records, in arrival order. A list, not a heap: the joiner adds a fetch topic by
        # topic, so most records arrive out of order, and one stable sort per release (C, merging a
        # few sorted runs) costs far less than a heap push and pop per record. `_buffer_sorted`
        # stays True while arrivals keep timestamp order (`_buffer_tail_ts`: the newest so far).
        self._buffer: list[Entry] = []
        self._buffer_tail_ts = _NEG_INF
        self._buffer_sorted = True
        self._next_seq = 1
        self.watermark = _NEG_INF  # semantics.md section 1; kept current by `add`
        self._lowest_max: float | None = None  # the smallest newest-timestamp among active partitions
        self._last_released_ts = _NEG_INF
        self._batch: list[Entry] = []
        self._eval_epoch: float | None = None
        self._exp_epoch: float | None = None
        self.plan_changes = 0
        self._last_joined_seq = 0  # lazy evaluation: entries with a larger seq form the batch
        self._journal: Journal | None = Journal() if journal else None
        if self._journal is not None:
            for table in self._tables:
                table.expired_log = self._journal.expired
        # What `add` needs of each input, found with one dict lookup per record: its position, its
        # statistics, its filter, and whether a filtered record is still kept (rows windows).
        self._inputs: dict[str, tuple[int, WindowStats, RecordFilter | None, bool]] = {
            s: (i, self._tables[i].stats, self._filters[s], self._rows_limit[i] is not None)
            for i, s in enumerate(self._names)
        }
        self._programs: dict[str, Program] = {}
        self.plan = default_plan(query)
        self.set_plan(plan or self.plan)
        self.plan_changes = 0

    # -- plan -------------------------------------------------------------------------------

    def set_plan(self, plan: JoinPlan) -> None:
        """Switch to `plan` for every record joined from now on."""
        plan.validate(self._names)
        hashed = self.query.algorithm == "hash"
        self._programs = {
            origin: compile_program(self.query, order, origin, hashed=hashed, exact_buckets=self._exact)
            for origin, order in plan.local_orders.items()
        }
        self._by_input = [self._programs[s] for s in self._names]
        self._cross: list[Sequence[CrossStep] | None] = []
        # The eager joins' common case (`run_exact_cross`): every window probed in an exact-value
        # index, nothing to admit. Per input: its steps, and the query slots (None: identity).
        self._exact_cross: list[tuple[Sequence[ExactStep], tuple[int, ...] | None] | None] = []
        for program in self._by_input:
            cross: list[CrossStep] | None = None
            exact: list[ExactStep] | None = None
            if program.cross_product:
                cross = []
                exact = []
                for step in program.steps[1:]:
                    w = self.windows[step.stream]
                    index = w.table.index(step.probe_field) if step.probe_field is not None else None
                    needs_admit = w.check_ts or w.rows is not None
                    cross.append((w, index, step.probe_field, step.probe_src_field, needs_admit))
                    if exact is not None:
                        if index is None or needs_admit or step.probe_src_field is None:
                            exact = None
                        else:
                            exact.append((w.table.stats, index, step.probe_src_field))
            self._cross.append(cross)
            slots: tuple[int, ...] | None = program.query_slots
            if slots == tuple(range(len(self._names))):
                slots = None
            self._exact_cross.append((exact, slots) if exact is not None else None)
        if plan != self.plan:
            self.plan_changes += 1
        self.plan = plan

    # -- input ------------------------------------------------------------------------------

    def assign(self, stream: str, partitions: Iterable[int]) -> None:
        """Declare the partitions of `stream` this operator reads (each holds the watermark)."""
        i = self._index[stream]
        for p in partitions:
            self._max_ts.setdefault((i, p), None)
        self._update_watermark()

    def set_idle(self, stream: str, partition: int, idle: bool = True) -> None:
        """Mark a partition idle (it stops holding the watermark back) or active again."""
        key = (self._index[stream], partition)
        if idle:
            self._idle.add(key)
        else:
            self._idle.discard(key)
        self._update_watermark()

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
        i, stats, passes, keep_filtered = self._inputs[stream]
        stats.arrivals += 1
        if stats.first_ts is None:
            stats.first_ts = ts
        last_ts = stats.last_ts
        if last_ts is None or ts > last_ts:
            stats.last_ts = ts
        if ts < self.watermark:  # the watermark before this record: late means below it on arrival
            stats.late += 1
            return False
        key = (i, partition)
        max_ts = self._max_ts
        seen = max_ts.get(key, _NEG_INF)
        if seen is None or ts > seen:
            max_ts[key] = ts
            # Only the partition(s) holding the watermark back can move it.
            lowest = self._lowest_max
            if seen is None or lowest is None or seen <= lowest or key in self._idle:
                self._idle.discard(key)
                self._update_watermark()
        elif key in self._idle:
            self._idle.discard(key)
            self._update_watermark()
        entry = Entry(i, partition, offset, ts, record, size, extra)
        if passes is not None and not passes(record):
            stats.filtered += 1
            if not keep_filtered:
                return True  # a filter may be pushed below a range window: the record can never join
            entry.passes = False
        self._buffer.append(entry)
        if ts >= self._buffer_tail_ts:  # in timestamp order: the common case
            self._buffer_tail_ts = ts
        else:
            self._buffer_sorted = False
        journal = self._journal
        if journal is not None:
            journal.added.append(entry)
        return True

    # -- time -------------------------------------------------------------------------------

    def _update_watermark(self) -> None:
        """Recompute the watermark from the newest timestamp of every active partition."""
        idle = self._idle
        lowest: float | None = None
        any_active = False
        for key, ts in self._max_ts.items():
            if idle and key in idle:
                continue
            if ts is None:  # a partition that has not seen a record holds the watermark back
                self._lowest_max = None
                return
            any_active = True
            if lowest is None or ts < lowest:
                lowest = ts
        if not any_active:  # every partition idle: the newest data seen is all there is
            for ts in self._max_ts.values():
                if ts is not None and (lowest is None or ts < lowest):
                    lowest = ts
        self._lowest_max = lowest
        if lowest is not None and lowest - self.query.lateness > self.watermark:
            self.watermark = lowest - self.query.lateness

    def advance(self) -> list[Result]:
        """Release what the watermark allows, join it, and return the new results."""
        return self._release(self.watermark, final=False)

    def finish(self) -> list[Result]:
        """End of input: release and join everything still buffered."""
        return self._release(math.inf, final=True)

    def _release(self, watermark: float, *, final: bool) -> list[Result]:
        released = self._take_released(watermark, self._inclusive or final)
        results: list[Result] = []
        if released:
            self._last_released_ts = released[-1].ts
            if self._journal is not None:
                self._journal.released.extend(released)
        if self._lazy_eval:
            for entry in released:
                entry.seq = self._next_seq
                self._next_seq += 1
                self._tables[entry.input].insert(entry)
            self._batch.extend(released)
            epoch = self._epoch(watermark, self.query.evaluation.every)
            if self._batch and (final or epoch != self._eval_epoch):
                self._eval_epoch = epoch
                self._join_batch(results)
                self._expire_after_join(watermark, final)
        else:
            self._join_eagerly(released, results)
            if self._lazy_exp:
                self._expire_after_join(watermark, final)
        return results

    def _take_released(self, watermark: float, inclusive: bool) -> list[Entry]:
        """Pop the buffered records the watermark passed, in timestamp order.

        Ties keep their arrival order (the sort is stable): count windows order equal timestamps by
        arrival, and a restored checkpoint's waiting records count as the earliest arrivals.
        """
        buffer = self._buffer
        if not buffer:
            return []
        if not self._buffer_sorted:
            buffer.sort(key=_ts)  # a few sorted runs (one per topic-partition of a fetch): merged in C
            self._buffer_sorted = True
        if buffer[-1].ts < watermark or (inclusive and buffer[-1].ts == watermark):
            self._buffer = []
            self._buffer_tail_ts = _NEG_INF
            return buffer
        cut = (bisect_right if inclusive else bisect_left)(buffer, watermark, key=_ts)
        released = buffer[:cut]
        del buffer[:cut]
        return released

    @staticmethod
    def _epoch(watermark: float, every: float | None) -> float:
        if every is None or not math.isfinite(watermark):
            return watermark
        return math.floor(watermark / every)

    def _expire_after_join(self, watermark: float, final: bool) -> None:
        if self._lazy_exp:
            epoch = self._epoch(watermark, self.query.expiration.every)
            if epoch == self._exp_epoch and not final:
                return
            self._exp_epoch = epoch
        now = self._last_released_ts  # no record joined from now on is older than this
        for table in self._tables:
            table.expire(now)

    # -- joining ----------------------------------------------------------------------------

    def _eligible(self, k: Entry) -> bool:
        """Return True when `k` may be the youngest member of a result (filter, own count window)."""
        if not k.passes:
            return False
        w = self.windows[self._names[k.input]]
        if w.rows is not None:
            return bool(k.cnt > k.group.count_at(k.ts) - w.rows)
        return True

    def _join_eagerly(self, released: Sequence[Entry], results: list[Result]) -> None:
        # Records with equal timestamps enter their windows together before any is joined: a count
        # window "as seen at t" holds every record with timestamp <= t.
        tables, exact_cross = self._tables, self._exact_cross
        rows_limit = self._rows_limit
        expire_eagerly = not self._lazy_exp
        seq = self._next_seq
        n = len(released)
        i = 0
        while i < n:
            first = released[i]
            ts = first.ts
            j = i + 1
            while j < n and released[j].ts == ts:
                j += 1
            if j - i == 1:
                group: Sequence[Entry] = (first,)
                check_seq = False
                first.seq = seq
                seq += 1
                tables[first.input].insert(first)
            else:
                group = released[i:j]
                check_seq = True  # equal timestamps: a group member released after k is in its window
                for entry in group:
                    entry.seq = seq
                    seq += 1
                    tables[entry.input].insert(entry)
            if expire_eagerly:
                for table in tables:
                    if ts > table.expires_at:
                        table.expire(ts)
            for k in group:
                if not k.passes:
                    continue
                origin = k.input
                limit = rows_limit[origin]
                if limit is not None and k.cnt <= k.group.count_at(ts) - limit:
                    continue  # a newer record with the same timestamp pushed k out of its window
                exact = exact_cross[origin]
                if exact is not None:
                    found = run_exact_cross(k, exact[0], exact[1], check_seq, results)
                    if found:
                        tables[origin].stats.results += found
                else:
                    self._join_one(k, check_seq, results)
            i = j
        self._next_seq = seq
        # Every released record is joined: a switch to lazy evaluation (restore) must not join them again.
        self._last_joined_seq = seq - 1

    def _join_batch(self, results: list[Result]) -> None:
        batch, self._batch = self._batch, []
        self._last_joined_seq = batch[-1].seq
        for origin, program in self._programs.items():
            i = self._index[origin]
            eligible = [k for k in batch if k.input == i and self._eligible(k)]
            if not eligible:
                continue
            if program.origin_pos == 0:
                for k in eligible:
                    self._join_one(k, True, results)
            else:
                self._emit(run_general(eligible, program, self.windows), program, results)

    def _join_one(self, k: Entry, check_seq: bool, results: list[Result]) -> None:
        """Join one new record `k` as the youngest member of its results."""
        program = self._by_input[k.input]
        steps = self._cross[k.input]
        if steps is not None:
            found = run_cross_product(k, steps, program.query_slots, check_seq)
            if found:
                self._tables[k.input].stats.results += len(found)
                results.extend(found)  # already in query order
        elif program.origin_pos == 0:
            self._emit(run_origin_first(k, program, self.windows, check_seq), program, results)
        else:
            self._emit(run_general((k,), program, self.windows), program, results)

    def _emit(self, partials: list[Partial], program: Program, results: list[Result]) -> None:
        if not partials:
            return
        self.windows[program.origin].table.stats.results += len(partials)
        reorder = program.to_query_order
        results.extend(partials if reorder is None else map(reorder, partials))

    # -- checkpoints ------------------------------------------------------------------------

    def take_delta(self) -> EngineDelta:
        """Return what changed since the last call (needs `journal=True`): persist it atomically."""
        if self._journal is None:
            raise RuntimeError("MultiJoin(journal=True) is needed to take deltas")
        return self._journal.take(self._scalars())

    def _scalars(self) -> dict[str, Any]:
        return {
            "next_seq": self._next_seq,
            "watermark": self.watermark,
            "last_released_ts": self._last_released_ts,
            "last_joined_seq": self._last_joined_seq,
            "lazy_evaluation": self._lazy_eval,
            "eval_epoch": self._eval_epoch,
            "exp_epoch": self._exp_epoch,
            "max_ts": [[i, p, ts] for (i, p), ts in self._max_ts.items()],
            "idle": [list(key) for key in self._idle],
            "plan_changes": self.plan_changes,
        }

    def restore(self, entries: Iterable[Entry], scalars: Mapping[str, Any]) -> None:
        """Rebuild the state of a fresh operator from persisted entries and scalars.

        Entries with `seq > 0` were released: they go back into their windows in release order
        (count-window positions are renumbered, which keeps every membership test unchanged);
        entries with `seq <= 0` were still waiting for the watermark.
        """
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
        if waiting:
            self._buffer = [*waiting, *self._buffer]
            self._buffer_sorted = False
            self._buffer_tail_ts = max(self._buffer_tail_ts, waiting[-1].ts)
        self._next_seq = int(scalars["next_seq"])
        self.watermark = float(scalars["watermark"])
        self._last_released_ts = float(scalars["last_released_ts"])
        self._last_joined_seq = last_joined
        self._eval_epoch = scalars["eval_epoch"]
        self._exp_epoch = scalars["exp_epoch"]
        for i, p, ts in scalars["max_ts"]:
            self._max_ts[(int(i), int(p))] = ts
        self._idle = {(int(i), int(p)) for i, p in scalars["idle"]}
        self._update_watermark()
        if self._lazy_eval and self._eval_epoch is None and math.isfinite(self.watermark):
            # An eager checkpoint keeps no epoch (a control change switched the mode): count the
            # multiples of `every` from the watermark it reached, or its first batch would be joined
            # at once. (A new engine joins its first release: the watermark rose from -infinity.)
            self._eval_epoch = self._epoch(self.watermark, self.query.evaluation.every)
        self.plan_changes = int(scalars.get("plan_changes", 0))
        if self._lazy_eval:
            self._batch = unjoined
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
        return len(self._buffer) + len(self._batch)
