"""`ShedSchedule`: the eager schedule of a query with `shedding` (load shedding under a memory budget).

The policies themselves live in `streamjoin.shedding` (`WindowShedder` over a `SheddingPolicy`);
this module only drives them in the per-instant order of the paper, one timestamp group at a time:

1. expire: the group's records enter their window tables, and every window drops what is out of it
   at the group's timestamp (`WindowStore.expire`): a range window by time, a count window by the
   records of each group newer than it, this instant's included (an arrival that `N` newer records
   of its own instant push out of its count window never enters); the policy forgets those records
   (`WindowShedder.expired`);
2. every record of the group arrives (`WindowShedder.arrive`), then each is admitted into its window;
   a window over its share evicts the policy's victims (`WindowShedder.admit`). An older victim leaves
   its window at once; a victim of this timestamp stays until the group has joined (records of one
   timestamp always join each other) and leaves right after;
3. each record of the group is joined as the youngest member of its results: it probes the retained
   older records and the records of its timestamp released before it;
4. the policy closes the instant with how many results each retained older record took part in.

How a record leaves depends on its window (`shed_held.py`): from a range window through
`WindowStore.evict`, like an expired one (`expired_log`, hence the checkpoint journal), so a restored
window is the retained one; from a count window it keeps its place in the count, and the journal
stores it again with `passes` 0 (`rewritten`), so a restored window counts it and does not hold it.
The policy's statistics are re-derived from the restored window when the schedule first runs
(`_resync`): see docs/shedding.md.

The budget is a control: `set_memory` changes the windows' share in place (the policy and the windows
are kept); a smaller share is applied at each window's next admission.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from streamjoin.engine.entry import Entry
from streamjoin.engine.join import JoinRunner, Result
from streamjoin.engine.schedule import EmitterRun, Expiration, Progress
from streamjoin.engine.shed_held import HeldRecords, held_for
from streamjoin.engine.window import WindowStore
from streamjoin.query.model import QueryDef
from streamjoin.shedding.entry import BadImportance, EntryFactory, ShedEntry
from streamjoin.shedding.policy import PolicyContext, make_policy
from streamjoin.shedding.runtime import WindowShedder

__all__ = ["ShedSchedule"]

SHED_BAD = "bad_importance"
"""`WindowStats.extra` key: records whose importance field is not a number > 0 (never joined)."""


def _arrival(entry: Entry) -> tuple[int, int, int]:
    return entry.input, entry.partition, entry.offset


class ShedSchedule:
    """Join each timestamp group at once, shedding by the query's policy (see the module doc)."""

    lazy: ClassVar[bool] = False

    def __init__(
        self,
        query: QueryDef,
        runner: JoinRunner,
        expiration: Expiration,
        progress: Progress,
    ) -> None:
        shedding = query.shedding
        if shedding is None:
            raise ValueError(f"query {query.name!r} has no shedding")
        self._query = query
        self._runner = runner
        self._expiration = expiration
        self._progress = progress
        self._tables: list[WindowStore] = runner.tables
        self._held: list[HeldRecords] = [
            held_for(inp, table) for inp, table in zip(query.inputs, self._tables, strict=True)
        ]
        self.factory = EntryFactory(query)
        lifetimes = tuple(held.lifetime for held in self._held)
        context = PolicyContext(len(query.inputs), self.factory.neighbours, lifetimes, shedding.seed)
        self.shedder = WindowShedder(make_policy(shedding.policy, context), shedding.share(len(query.inputs)))
        self._synced = False
        for table in self._tables:  # `shed`, `importance`: None (not reported) without shedding
            table.stats.shed = table.stats.shed or 0
            table.stats.importance = table.stats.importance or 0.0

    @property
    def runs(self) -> Sequence[EmitterRun]:
        """Return no run: results of a shedding query are formatted one by one (their trailer)."""
        return ()

    def log_rewrites(self, log: list[Entry]) -> None:
        """Log to `log` each entry whose stored form changes (a count window's shed record, now with
        `passes` 0): the checkpoint journal's `rewritten`."""
        for held in self._held:
            held.rewritten_log = log

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

        A count window's restored record with `passes` False was shed (or filtered) before: it keeps
        its place in the count and is held no more. Each other record arrives and is admitted again
        in release order, at its own timestamp, as if it had just arrived. Nothing is shed here: a
        window over a (lowered) share sheds at its next admission, as it would had the budget
        changed in place.
        """
        self._synced = True
        restored = sorted((e for table in self._tables for e in table.scan()), key=lambda e: e.seq)
        share = self.shedder.share
        self.shedder.share = max(share, len(restored))
        for entry in restored:
            shed = self._entry(entry) if entry.passes else None
            if shed is None:
                self._held[entry.input].leave(entry)
                continue
            self.shedder.arrive(shed, entry.ts)
            self._admit(entry, shed, entry.ts, frozenset())
        self.shedder.share = share

    def _entry(self, entry: Entry) -> ShedEntry | None:
        """Return the policy's view of `entry`; None (counted) when its importance is not valid."""
        try:
            return self.factory.entry(entry.input, seq=entry.seq, ts=entry.ts, record=entry.record)
        except BadImportance:
            stats = self._tables[entry.input].stats
            stats.extra[SHED_BAD] = stats.extra.get(SHED_BAD, 0) + 1
            return None

    def _expire(self, ts: float, group: Sequence[Entry]) -> None:
        """Drop from every window what is out of it at `ts` (the group is in its tables already)."""
        arrivals: list[list[Entry]] = [[] for _ in self._tables]
        for entry in group:
            arrivals[entry.input].append(entry)
        for table, held, mine in zip(self._tables, self._held, arrivals, strict=True):
            if ts > table.expires_at:
                table.expire(ts)
            for shed in held.expired(ts, mine):
                self.shedder.expired(shed)

    def _admit(self, entry: Entry, shed: ShedEntry, now: float, group: frozenset[int]) -> list[Entry]:
        """Admit `entry`; evict older victims at once; return the victims of this timestamp."""
        held = self._held[entry.input]
        held.add(entry, shed)
        stats = self._tables[entry.input].stats
        later: list[Entry] = []
        for victim in self.shedder.admit(shed, tuple(held.shed.values()), now):
            gone = held.pop(victim.seq)
            stats.shed = (stats.shed or 0) + 1
            if victim.seq in group:
                later.append(gone)
            else:
                held.leave(gone)
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
        for entry in group:
            tables[entry.input].insert(entry)
        self._expire(ts, group)
        arriving: list[tuple[Entry, ShedEntry]] = []
        for entry in group:
            own = runner.own[entry.input]
            if own is not None and not own(entry):
                continue  # newer records of its count group at this instant pushed it out: expired
            shed = self._entry(entry) if entry.passes else None
            if shed is None:  # filtered (it still counts in a count window), or no valid importance
                self._held[entry.input].leave(entry)
                continue
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
            self._held[entry.input].leave(entry)
        progress.last_joined_seq = progress.next_seq - 1
