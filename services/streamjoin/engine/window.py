"""Window tables: the records of one input that are (or may still be) inside its window.

`WindowStore` is the interface the join runs against; `MemoryWindowTable` is the in-memory
implementation (also the unit-test double). The Redis-backed store of the joiner implements the same
interface, so the engine never knows where its state lives.

Entries are kept in release order (= timestamp order), in one sequence for scans (nested loops) and
in one hash index per equi-join attribute the window is probed on (hash join). Expiration removes
from the old end; for rows windows, a record leaves once `rows` newer records of its group exist.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice
from typing import Any, Protocol

from streamjoin.engine.entry import Entry
from streamjoin.engine.stats import WindowStats
from streamjoin.query.model import InputDef, RangeWindow, RowsWindow

__all__ = ["EMPTY", "MemoryWindowTable", "RowsGroup", "StoreFactory", "WindowStore", "bucket_key"]

EMPTY: tuple[Entry, ...] = ()
_LIST_BUCKET_MAX = 64  # a longer list bucket turns into a deque when its oldest entry expires


def bucket_key(value: Any, buckets: int | None) -> Any:
    """Return the index key of `value`: the value itself, or its hash modulo `buckets`.

    Golab's hash join uses `b` buckets (`x mod b`), so a bucket mixes values and the equality must be
    re-checked in the loop; `buckets=None` keys the index by the exact value (one value per bucket).
    """
    if buckets is None:
        return value
    return hash(value) % buckets


class RowsGroup:
    """The records of one (partition, partition_by value) of a rows window, for membership checks."""

    __slots__ = ("count", "first_cnt", "ts")

    def __init__(self) -> None:
        self.count = 0  # records ever inserted into the group
        self.first_cnt = 1  # cnt of ts[0]
        self.ts: list[float] = []  # timestamps of the records still held, oldest first

    def count_at(self, ts: float) -> int:
        """Return how many of the group's records have a timestamp <= `ts` (their largest cnt)."""
        return self.first_cnt - 1 + bisect_right(self.ts, ts)


class WindowStore(Protocol):
    """What the join needs from a window table, wherever its state lives."""

    definition: InputDef
    stats: WindowStats
    expires_at: float  # `expire(now)` drops something only when now > expires_at (-inf: do expire)

    def insert(self, entry: Entry) -> None:
        """Add a released record (its `seq` is set)."""

    def bucket(self, field: str, value: Any) -> Sequence[Entry]:
        """Return the entries whose `field` may equal `value` (exactly, or same hash bucket), oldest first."""

    def scan(self) -> Iterable[Entry]:
        """Return every entry held, oldest first."""

    def index(self, field: str) -> Mapping[Any, Sequence[Entry]] | None:
        """Return the live hash index of `field` when it is keyed by exact values, else None.

        Each bucket holds its entries in release order (`seq`): the eager join relies on it.
        """

    def expire(self, now: float) -> int:
        """Drop what no record with timestamp >= `now` can join; return how many were dropped."""

    def evict(self, entry: Entry) -> None:
        """Remove `entry` (held) as `expire` would, logging it in `expired_log` (load shedding)."""

    def distinct_keys(self) -> int:
        """Return the number of distinct values of the first indexed attribute."""

    def __len__(self) -> int:
        """Return the number of entries held."""

    expired_log: list[Entry] | None


StoreFactory = Callable[[InputDef, Sequence[str], "int | None"], WindowStore]


class MemoryWindowTable:
    """An in-memory window table with a hash index per probed attribute."""

    def __init__(self, definition: InputDef, index_fields: Sequence[str], buckets: int | None = None) -> None:
        self.definition = definition
        self.stats = WindowStats()
        self._buckets = buckets
        window = definition.window
        self._range: float | None = window.range if isinstance(window, RangeWindow) else None
        self._rows: int | None = window.rows if isinstance(window, RowsWindow) else None
        self._partition_by = window.partition_by if isinstance(window, RowsWindow) else None
        self._entries: deque[Entry] = deque()
        # For rows windows, evictions are not oldest-first across groups: keep a seq-keyed dict.
        self._by_seq: dict[int, Entry] = {}
        # A bucket starts as a list (most hold a few entries: a list is cheaper to build and 10x
        # smaller than a deque) and becomes a deque once long, when removing from its front
        # would copy too much (see `expire`).
        self._indexes: dict[str, dict[Any, list[Entry] | deque[Entry]]] = {f: {} for f in index_fields}
        self._index_items = list(self._indexes.items())
        self.expires_at = math.inf
        self._groups: dict[tuple[int, Any], RowsGroup] = {}
        self._group_entries: dict[tuple[int, Any], deque[Entry]] = {}
        self._dirty_groups: set[tuple[int, Any]] = set()  # groups that grew since the last expiry
        self._overflow = False  # some group holds more than `rows` records
        self._evicted: set[int] = set()  # seqs of rows entries evicted but still counted by their group
        self._ghosts: set[int] = set()  # seqs of rows entries shed but still counted, not logged yet
        self._dropped: set[int] = set()  # seqs expired from their bucket, still in `_entries` (range)
        self.expired_log: list[Entry] | None = None  # set to a list to record what expire() drops

    def __len__(self) -> int:
        return len(self._by_seq) if self._rows is not None else len(self._entries) - len(self._dropped)

    @property
    def index_fields(self) -> tuple[str, ...]:
        """Return the attributes this table keeps a hash index of."""
        return tuple(self._indexes)

    @property
    def is_rows(self) -> bool:
        """Return True for a count-based window."""
        return self._rows is not None

    def insert(self, entry: Entry) -> None:
        """Add a released record to the window and to every index."""
        record = entry.record
        if self._rows is None:
            entries = self._entries
            if not entries:
                self.expires_at = entry.ts + self._range  # type: ignore[operator]
            entries.append(entry)
        else:
            self._insert_rows(entry)
        buckets = self._buckets
        for field, index in self._index_items:
            key = record[field] if buckets is None else hash(record[field]) % buckets
            bucket = index.get(key)
            if bucket is None:
                index[key] = [entry]
            else:
                bucket.append(entry)
        stats = self.stats
        stats.inserts += 1
        stats.records += 1
        stats.bytes += entry.size

    def _insert_rows(self, entry: Entry) -> None:
        assert self._rows is not None
        self._by_seq[entry.seq] = entry
        gkey = (entry.partition, entry.record.get(self._partition_by) if self._partition_by else None)
        group = self._groups.get(gkey)
        if group is None:
            group = self._groups[gkey] = RowsGroup()
            self._group_entries[gkey] = deque()
        group.count += 1
        group.ts.append(entry.ts)
        entry.cnt = group.count
        entry.group = group
        self._group_entries[gkey].append(entry)
        self._dirty_groups.add(gkey)
        if group.count - group.first_cnt + 1 > self._rows:
            self._overflow = True
            self.expires_at = -math.inf

    def bucket(self, field: str, value: Any) -> Sequence[Entry]:
        """Return the entries of the index bucket `value` falls in (empty when none)."""
        return self._indexes[field].get(bucket_key(value, self._buckets), EMPTY)

    def index(self, field: str) -> Mapping[Any, Sequence[Entry]] | None:
        """Return the live hash index of `field` when it is keyed by exact values, else None."""
        return self._indexes[field] if self._buckets is None else None

    def scan(self) -> Iterable[Entry]:
        """Return every entry held, oldest first."""
        return self._by_seq.values() if self._rows is not None else self._entries

    def distinct_keys(self) -> int:
        """Return the number of distinct values of the first indexed attribute."""
        for index in self._indexes.values():
            return len(index)
        return 0

    def expire(self, now: float) -> int:
        """Drop entries no future record (timestamp >= `now`) can join; return the count."""
        if self._rows is not None:
            dropped = self._expire_rows()
        else:  # inline: under eager expiration this runs for almost every new timestamp
            bound = now - self._range  # type: ignore[operator]
            entries = self._entries
            dropped = 0
            if entries and entries[0].ts < bound:
                log = self.expired_log
                buckets = self._buckets
                index_items = self._index_items
                size = 0
                while entries and entries[0].ts < bound:
                    entry = entries.popleft()
                    if self._dropped and entry.seq in self._dropped:
                        self._dropped.discard(entry.seq)  # already left with its bucket (counted)
                        continue
                    record = entry.record
                    for field, index in index_items:  # the oldest entry is the oldest of its buckets too
                        key = record[field] if buckets is None else hash(record[field]) % buckets
                        bucket = index[key]
                        n = len(bucket)
                        if n == 1:
                            del index[key]
                        elif type(bucket) is deque:
                            bucket.popleft()
                        elif n <= _LIST_BUCKET_MAX:
                            del bucket[0]
                        else:
                            index[key] = deque(islice(bucket, 1, None))
                    size += entry.size
                    if log is not None:
                        log.append(entry)
                    dropped += 1
                self.stats.bytes -= size
            self.expires_at = entries[0].ts + self._range if entries else math.inf  # type: ignore[operator]
        if dropped:
            stats = self.stats
            stats.expirations += dropped
            stats.records -= dropped
        return dropped

    def expire_bucket(self, field: str, value: Any, now: float) -> int:
        """Drop the expired entries of the bucket of `field` that `value` falls in; return the count.

        A range window only (Kostowski's bucket-level invalidation): a bucket is in release order,
        so its expired entries are at its front. They leave every index and the statistics at once
        and the scan order lazily (the next `expire` skips them); `expired_log` records them.
        """
        if self._rows is not None:
            return 0
        index = self._indexes[field]
        key = bucket_key(value, self._buckets)
        bucket = index.get(key)
        bound = now - self._range  # type: ignore[operator]
        if not bucket or bucket[0].ts >= bound:
            return 0
        gone = []
        while bucket and bucket[0].ts < bound:
            gone.append(bucket.popleft() if isinstance(bucket, deque) else bucket.pop(0))
        if not bucket:
            del index[key]
        log = self.expired_log
        for entry in gone:
            self._dropped.add(entry.seq)
            for other, other_index in self._index_items:
                if other != field:
                    other_key = bucket_key(entry.record[other], self._buckets)
                    other_bucket = other_index[other_key]
                    other_bucket.remove(entry)
                    if not other_bucket:
                        del other_index[other_key]
            self.stats.bytes -= entry.size
            if log is not None:
                log.append(entry)
        stats = self.stats
        stats.expirations += len(gone)
        stats.records -= len(gone)
        return len(gone)

    def evict(self, entry: Entry) -> None:
        """Remove `entry` now (it counts as an expiration); a rows entry keeps its place in its group.

        Count-window positions stay as they were: the other records' membership does not change
        because one record was shed, so the group forgets it only when it would have expired.
        """
        if self._rows is not None:
            del self._by_seq[entry.seq]
            self._evicted.add(entry.seq)
        else:
            self._entries.remove(entry)
        self._unindex(entry)
        entry.passes = False  # joins nothing from now on (a lazy batch may still hold it)
        if self.expired_log is not None:
            self.expired_log.append(entry)
        stats = self.stats
        stats.expirations += 1
        stats.records -= 1

    def ghost(self, entry: Entry) -> None:
        """Stop holding `entry` but keep its place in its count (a rows window; load shedding).

        Unlike `evict`, nothing is logged now: a host that persists windows keeps the entry, whose
        `passes` is now False, so that a restored window counts it too; `expire` logs it in
        `expired_log` once it would have left the window. Statistics: it is no longer held.
        """
        if self._rows is None:
            raise ValueError("only a count (rows) window keeps the place of a record it no longer holds")
        del self._by_seq[entry.seq]
        self._ghosts.add(entry.seq)
        self._unindex(entry)
        entry.passes = False
        self.stats.records -= 1

    def _expire_rows(self) -> int:
        # Any future record has timestamp >= every record held, so only the newest `rows` of each
        # group can still be in a window: evict the rest.
        assert self._rows is not None
        limit = self._rows
        dropped = 0
        for gkey in self._dirty_groups:
            queue = self._group_entries[gkey]
            excess = len(queue) - limit
            if excess <= 0:
                continue
            group = self._groups[gkey]
            for _ in range(excess):
                entry = queue.popleft()
                if self._evicted and entry.seq in self._evicted:
                    self._evicted.discard(entry.seq)  # already gone (and counted) when evicted
                    dropped -= 1
                    continue
                if self._ghosts and entry.seq in self._ghosts:
                    self._ghosts.discard(entry.seq)  # no longer held (counted then); its place goes now
                    dropped -= 1
                    if self.expired_log is not None:
                        self.expired_log.append(entry)
                    continue
                del self._by_seq[entry.seq]
                self._unindex(entry)
                if self.expired_log is not None:
                    self.expired_log.append(entry)
            del group.ts[:excess]
            group.first_cnt += excess
            dropped += excess
        self._dirty_groups.clear()
        self._overflow = False
        self.expires_at = math.inf
        return dropped

    def _unindex(self, entry: Entry) -> None:
        record = entry.record
        buckets = self._buckets
        self.stats.bytes -= entry.size
        for field, index in self._index_items:
            key = bucket_key(record[field], buckets)
            bucket = index[key]
            bucket.remove(entry)  # usually near the left: an evicted entry is its group's oldest
            if not bucket:
                del index[key]


def memory_store(definition: InputDef, index_fields: Sequence[str], buckets: int | None) -> WindowStore:
    """Build an in-memory window table (the default `StoreFactory`)."""
    return MemoryWindowTable(definition, index_fields, buckets)
