"""Schedules: when released records are joined (evaluation) and when windows are cleaned (expiration).

Both are strategies chosen once from the query (`SCHEDULES[evaluation.mode]`,
`EXPIRATIONS[expiration.mode]`) and share one `Progress` (the clocks a checkpoint keeps).

- `EagerSchedule` (Golab's eager evaluation) works in *timestamp groups*: the released records of one
  timestamp enter their windows together (a count window "as seen at t" holds every record with
  timestamp <= t), the expiration strategy cleans the windows, and then each record is joined as
  the youngest member of its results.
- `LazySchedule` inserts every released record at once and joins them as one batch each time the
  watermark crosses a multiple of tau (and at end of input).
- `EagerExpiration` cleans before every timestamp group (and right after a lazy batch);
  `LazyExpiration` cleans after the first join once the watermark crossed a multiple of tau. Under
  lazy expiration windows hold expired records, so the admission closures test timestamps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from streamjoin.engine.entry import Entry
from streamjoin.engine.execute import run_exact_cross
from streamjoin.engine.join import JoinRunner, Result
from streamjoin.engine.window import WindowStore
from streamjoin.query.model import QueryDef

__all__ = [
    "EXPIRATIONS",
    "SCHEDULES",
    "EagerExpiration",
    "EagerSchedule",
    "EmitterRun",
    "Expiration",
    "LazyExpiration",
    "LazySchedule",
    "Progress",
    "Schedule",
    "epoch",
]


def epoch(watermark: float, every: float | None) -> float:
    """Return the number of the tau-interval `watermark` is in (the watermark itself without tau)."""
    if every is None or not math.isfinite(watermark):
        return watermark
    return math.floor(watermark / every)


@dataclass(slots=True)
class Progress:
    """What the schedules have done so far: the clocks a checkpoint keeps."""

    next_seq: int = 1  # the release number of the next released record
    last_released_ts: float = -math.inf
    last_joined_seq: int = 0  # lazy evaluation: entries with a larger seq form the batch
    eval_epoch: float | None = None
    exp_epoch: float | None = None
    batch: list[Entry] = field(default_factory=list)  # released, not joined yet (lazy evaluation)


class Expiration(Protocol):
    """When windows drop what no future record can join."""

    holds_expired: bool  # windows may hold expired records when probed: the loops test admission

    def store(self, table: WindowStore) -> WindowStore:
        """Return the window the join uses for `table` (a wrapper that cleans what it is probed on)."""
        ...

    def per_group(self, tables: Sequence[WindowStore]) -> Sequence[WindowStore]:
        """Return the windows cleaned before each timestamp group is joined (eager schedule)."""
        ...

    def after_join(
        self, progress: Progress, tables: Sequence[WindowStore], watermark: float, final: bool
    ) -> None:
        """Clean windows after a release was joined, if it is time to."""
        ...


class EagerExpiration:
    """Expire before every probe (Golab's eager expiration); right after each batch when lazy."""

    holds_expired = False

    def __init__(self, query: QueryDef) -> None:
        del query

    def store(self, table: WindowStore) -> WindowStore:
        """Return `table` itself."""
        return table

    def per_group(self, tables: Sequence[WindowStore]) -> Sequence[WindowStore]:
        """Return every window."""
        return tuple(tables)

    def after_join(
        self, progress: Progress, tables: Sequence[WindowStore], watermark: float, final: bool
    ) -> None:
        """Drop what no record at or after the last released timestamp can join."""
        now = progress.last_released_ts
        for table in tables:
            if now > table.expires_at:
                table.expire(now)


class LazyExpiration:
    """Expire every tau of watermark progress (Golab's lazy expiration)."""

    holds_expired = True

    def __init__(self, query: QueryDef) -> None:
        self._every = query.expiration.every

    def store(self, table: WindowStore) -> WindowStore:
        """Return `table` itself."""
        return table

    def per_group(self, tables: Sequence[WindowStore]) -> Sequence[WindowStore]:
        """Return no window: nothing is cleaned between probes."""
        return ()

    def after_join(
        self, progress: Progress, tables: Sequence[WindowStore], watermark: float, final: bool
    ) -> None:
        """Drop expired records once the watermark crossed a multiple of tau (and at end of input)."""
        current = epoch(watermark, self._every)
        if current == progress.exp_epoch and not final:
            return
        progress.exp_epoch = current
        now = progress.last_released_ts  # no record joined from now on is older than this
        for table in tables:
            table.expire(now)


class Schedule(Protocol):
    """When released records are joined."""

    # True: released records wait in their windows before they are joined (batches), so a window
    # holds records newer than the one joining, and records it will expire (admission tests them).
    lazy: ClassVar[bool]

    def __init__(
        self,
        query: QueryDef,
        runner: JoinRunner,
        expiration: Expiration,
        progress: Progress,
    ) -> None: ...

    def release(self, released: list[Entry], watermark: float, final: bool, results: list[Result]) -> None:
        """Take records released in timestamp order (their `seq` unset); join what is due.

        `final`: nothing is held back any more (the end of input, or every input partition idle):
        join everything released so far.
        """
        ...

    @property
    def runs(self) -> Sequence[EmitterRun]:
        """Return the runs of the last release's results emitted by one entry (`EmitterRun`)."""
        ...


EmitterRun = tuple[int, int, Entry]
"""(start, end, k): `results[start:end]` of a release are the results whose youngest member is `k`
(every other member is older, or as old and released earlier), each holding `k` at position
`k.input`. Results outside every run come from joins that do not report their emitter."""


class _Scheduled:
    """What every schedule holds: the runner, the expiration strategy, the clocks."""

    def __init__(
        self, query: QueryDef, runner: JoinRunner, expiration: Expiration, progress: Progress
    ) -> None:
        self._query = query
        self._runner = runner
        self._expiration = expiration
        self._progress = progress
        self._per_group = expiration.per_group(runner.tables)  # cleaned before each timestamp group
        self._runs: list[EmitterRun] = []

    @property
    def runs(self) -> Sequence[EmitterRun]:
        """Return the runs of the last release's results emitted by one entry (`EmitterRun`)."""
        return self._runs


class EagerSchedule(_Scheduled):
    """Join each released record at once, one timestamp group at a time (Golab's Table 4)."""

    lazy: ClassVar[bool] = False

    def release(self, released: list[Entry], watermark: float, final: bool, results: list[Result]) -> None:
        """Join every released record now; then let the expiration strategy clean up."""
        self._runs = []
        if released:
            self._join(released, results)
        self._expiration.after_join(self._progress, self._runner.tables, watermark, final)

    def _join(self, released: Sequence[Entry], results: list[Result]) -> None:
        runner = self._runner
        tables, exact_cross, own, join_one = runner.tables, runner.exact_cross, runner.own, runner.join_one
        expire_tables = self._per_group
        progress = self._progress
        add_run = self._runs.append
        seq = progress.next_seq
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
            for table in expire_tables:
                if ts > table.expires_at:
                    table.expire(ts)
            for k in group:
                if not k.passes:
                    continue
                origin = k.input
                in_own = own[origin]
                if in_own is not None and not in_own(k):
                    continue  # a newer record with the same timestamp pushed k out of its window
                exact = exact_cross[origin]
                if exact is not None:
                    found = run_exact_cross(k, exact[0], exact[1], check_seq, results)
                    if found:
                        tables[origin].stats.results += found
                        end = len(results)
                        add_run((end - found, end, k))
                else:
                    join_one(k, check_seq, results)
            i = j
        progress.next_seq = seq
        # Every released record is joined: a switch to lazy evaluation (restore) must not join them again.
        progress.last_joined_seq = seq - 1


class LazySchedule(_Scheduled):
    """Join released records as one batch each time the watermark crosses a multiple of tau."""

    lazy: ClassVar[bool] = True

    def release(self, released: list[Entry], watermark: float, final: bool, results: list[Result]) -> None:
        """Insert the released records; join the batch when an epoch ends (or at end of input)."""
        self._runs = []  # a batch's joins do not report their emitters
        progress, tables = self._progress, self._runner.tables
        seq = progress.next_seq
        for entry in released:
            entry.seq = seq
            seq += 1
            tables[entry.input].insert(entry)
        progress.next_seq = seq
        batch = progress.batch
        batch.extend(released)
        current = epoch(watermark, self._query.evaluation.every)
        if batch and (final or current != progress.eval_epoch):
            progress.eval_epoch = current
            progress.batch = []
            progress.last_joined_seq = batch[-1].seq
            self._runner.join_batch(batch, results)
            self._expiration.after_join(progress, tables, watermark, final)


SCHEDULES: Mapping[str, type[Schedule]] = {"eager": EagerSchedule, "lazy": LazySchedule}
EXPIRATIONS: dict[str, Callable[[QueryDef], Expiration]] = {  # more in `invalidation.py`
    "eager": EagerExpiration,
    "lazy": LazyExpiration,
}
