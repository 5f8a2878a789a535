"""`ShedSchedule`: the eager schedule of a query with `shedding` (load shedding under a memory budget).

The policies themselves live in `streamjoin.shedding` (`WindowShedder` over a `SheddingPolicy`);
this module only drives them in the per-instant order of the paper, one timestamp group at a time:

1. expire: every window drops what the group's timestamp no longer reaches (`WindowStore.expire`),
   and the policy forgets those records (`WindowShedder.expired`);
2. every record of the group arrives (`WindowShedder.arrive`), then each is admitted into its window;
   a window over its share evicts the policy's victims (`WindowShedder.admit`). An older victim leaves
   its window at once (`WindowStore.evict`); a victim of this timestamp stays until the group has
   joined (records of one timestamp always join each other) and leaves right after;
3. each record of the group is joined as the youngest member of its results: it probes the retained
   older records and the records of its timestamp released before it;
4. the policy closes the instant with how many results each retained older record took part in.

An evicted record leaves through `WindowStore.evict`, like an expired one (`expired_log`, hence the
checkpoint journal), so a restored window is the retained one. The policy's statistics are re-derived
from the restored window when the schedule first runs (`_resync`): see docs/shedding.md.

The budget is a control: `set_memory` changes the windows' share in place (the policy and the windows
are kept); a smaller share is applied at each window's next admission.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from streamjoin.engine.entry import Entry
from streamjoin.engine.eviction import InsertHook
from streamjoin.engine.join import JoinRunner, Result
from streamjoin.engine.schedule import Expiration, Progress
from streamjoin.engine.window import WindowStore
from streamjoin.query.model import QueryDef, RangeWindow
from streamjoin.shedding.entry import BadImportance, EntryFactory, ShedEntry
from streamjoin.shedding.policy import PolicyContext, make_policy
from streamjoin.shedding.runtime import WindowShedder

__all__ = ["ShedSchedule", "check_shedding"]

SHED_BAD = "bad_importance"
"""`WindowStats.extra` key: records whose importance field is not a number > 0 (never joined)."""


def _arrival(entry: Entry) -> tuple[int, int, int]:
    return entry.input, entry.partition, entry.offset


def check_shedding(query: QueryDef) -> None:
    """Raise ValueError when `query` has `shedding` but the engine cannot shed it (rows windows)."""
    if query.shedding is None:
        return
    for inp in query.inputs:
        if not isinstance(inp.window, RangeWindow):
            raise ValueError(f"input {inp.stream!r}: shedding needs time-based (range) windows")


class _Held:
    """One window's retained records as the policy sees them, in release order."""

    __slots__ = ("engine", "shed")

    def __init__(self) -> None:
        self.shed: dict[int, ShedEntry] = {}  # by seq, in release order (as the simulator's windows)
        self.engine: dict[int, Entry] = {}


class ShedSchedule:
    """Join each timestamp group at once, shedding by the query's policy (see the module doc)."""

    lazy: ClassVar[bool] = False

    def __init__(
        self,
        query: QueryDef,
        runner: JoinRunner,
        expiration: Expiration,
        hooks: Sequence[InsertHook | None] | None,
        progress: Progress,
    ) -> None:
        del hooks  # the shedder is this schedule's eviction policy
        shedding = query.shedding
        if shedding is None:
            raise ValueError(f"query {query.name!r} has no shedding")
        check_shedding(query)
        self._query = query
        self._runner = runner
        self._expiration = expiration
        self._progress = progress
        self._tables: list[WindowStore] = runner.tables
        self._ranges = tuple(float(inp.window.range) for inp in query.inputs)  # type: ignore[union-attr]
        self.factory = EntryFactory(query)
        context = PolicyContext(len(query.inputs), self.factory.neighbours, self._ranges, shedding.seed)
        self.shedder = WindowShedder(make_policy(shedding.policy, context), shedding.share(len(query.inputs)))
        self._held = [_Held() for _ in query.inputs]
        self._synced = False
        for table in self._tables:  # `shed`, `importance`: None (not reported) without shedding
            table.stats.shed = table.stats.shed or 0
            table.stats.importance = table.stats.importance or 0.0

    def set_memory(self, memory: int) -> None:
        """Set the budget (records over every window); each window's next admission applies it."""
        self.shedder.share = memory // len(self._tables)

    def release(self, released: list[Entry], watermark: float, final: bool, results: list[Result]) -> None:
        """Join every released record now, one timestamp group at a time."""
        if not self._synced:
            self._resync()
        i, n = 0, len(released)
        while i < n:
            ts = released[i].ts
            j = i + 1
            while j < n and released[j].ts == ts:
                j += 1
            # One instant; its records in a fixed order (input, partition, offset), whatever order
            # they were fetched in, so the joiner, replay and the back-fill shed alike.
            self._group(sorted(released[i:j], key=_arrival), ts, results)
            i = j

    def _resync(self) -> None:
        """Re-derive the policy's statistics from the windows (restored from a checkpoint).

        Each held record arrives and is admitted again in release order, at its own timestamp, as
        if it had just arrived. Nothing is shed here: a window over a (lowered) share sheds at its
        next admission, as it would had the budget changed in place.
        """
        self._synced = True
        held = sorted((e for table in self._tables for e in table.scan()), key=lambda e: e.seq)
        share = self.shedder.share
        self.shedder.share = max(share, len(held))
        for entry in held:
            shed = self._entry(entry)
            if shed is None:
                continue
            self.shedder.arrive(shed, entry.ts)
            self._admit(entry, shed, entry.ts, frozenset())
        self.shedder.share = share

    def _entry(self, entry: Entry) -> ShedEntry | None:
        try:
            return self.factory.entry(entry.input, seq=entry.seq, ts=entry.ts, record=entry.record)
        except BadImportance:
            table = self._tables[entry.input]
            table.stats.extra[SHED_BAD] = table.stats.extra.get(SHED_BAD, 0) + 1
            table.evict(entry)
            return None

    def _expire(self, ts: float) -> None:
        for table, held, lifetime in zip(self._tables, self._held, self._ranges, strict=True):
            if ts > table.expires_at:
                table.expire(ts)
            gone: list[ShedEntry] = []
            for shed in held.shed.values():  # release order is timestamp order: oldest first
                if ts - shed.ts <= lifetime:
                    break
                gone.append(shed)
            for shed in gone:
                del held.shed[shed.seq]
                del held.engine[shed.seq]
                self.shedder.expired(shed)

    def _admit(self, entry: Entry, shed: ShedEntry, now: float, group: frozenset[int]) -> list[Entry]:
        """Admit `entry`; evict older victims at once; return the victims of this timestamp."""
        held = self._held[entry.input]
        held.shed[shed.seq] = shed
        held.engine[shed.seq] = entry
        table = self._tables[entry.input]
        later: list[Entry] = []
        for victim in self.shedder.admit(shed, tuple(held.shed.values()), now):
            del held.shed[victim.seq]
            gone = held.engine.pop(victim.seq)
            table.stats.shed = (table.stats.shed or 0) + 1
            if victim.seq in group:
                later.append(gone)
            else:
                table.evict(gone)
        return later

    def _group(self, group: Sequence[Entry], ts: float, results: list[Result]) -> None:
        progress = self._progress
        first_seq = progress.next_seq
        for entry in group:
            entry.seq = progress.next_seq
            progress.next_seq += 1
        # Same timestamp: a record released after k is in its window when k probes (`check_seq`).
        check_seq = len(group) > 1
        tables, runner = self._tables, self._runner
        self._expire(ts)
        arriving: list[tuple[Entry, ShedEntry]] = []
        for entry in group:
            tables[entry.input].insert(entry)
            shed = self._entry(entry)
            if shed is not None:
                arriving.append((entry, shed))
                self.shedder.arrive(shed, ts)
        seqs = frozenset(e.seq for e in group)
        dropped: list[Entry] = []
        for entry, shed in arriving:
            dropped.extend(self._admit(entry, shed, ts, seqs))
        start = len(results)
        for entry, _ in arriving:
            if runner.eligible(entry):
                runner.join_one(entry, check_seq, results)
        produced: Counter[int] = Counter()
        combine = self.factory.combine
        importance = self.factory.importance
        for result in results[start:]:
            youngest = max(result, key=lambda e: e.seq)
            stats = tables[youngest.input].stats
            stats.importance = (stats.importance or 0.0) + combine([importance(e.record) for e in result])
            produced.update(e.seq for e in result if e.seq < first_seq)
        self.shedder.end_instant(ts, produced)
        for entry in dropped:
            tables[entry.input].evict(entry)
        progress.last_joined_seq = progress.next_seq - 1
