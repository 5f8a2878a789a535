"""`Clock`: the engine's event time. Watermark, reorder buffer and late records.

Contract:
- `add` (a record arrives): statistics are counted; a record below the watermark *as it stands* is
  late (counted, never buffered); the record's partition may move the watermark; a record failing its
  input's filter is dropped (range windows) or kept and marked (count windows); the rest wait in the
  reorder buffer.
- `take_released(bound, inclusive)`: pop the buffered records below `bound` (or at it, `inclusive`),
  in timestamp order, ties in arrival order.
- The watermark is the smallest newest timestamp of every active partition, minus the lateness; a
  partition that has seen nothing holds it at -infinity; idle partitions do not hold it back. It
  never goes back.
- Idle flush: when every partition is idle, the watermark is the largest newest timestamp (no
  lateness) and *closed*: every record at or below it is released, and one arriving at it later is
  late. When input resumes after that (a record or a progress marker of any partition), every
  partition is active again and holds the watermark at its newest timestamp until it speaks or its
  host marks it idle again, so the ordinary disorder between the partitions of the next burst makes
  no late record (docs/queries.md, "Idle timeout").
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from streamjoin.engine.checkpoint import Journal
from streamjoin.engine.entry import Entry
from streamjoin.engine.program import RecordFilter
from streamjoin.engine.stats import WindowStats

__all__ = ["Clock", "InputSlot"]

_NEG_INF = -math.inf
_ts = attrgetter("ts")

# What `add` needs of one input, found with one dict lookup per record: its position, its
# statistics, its filter (None: none), and whether a record failing it is still kept (count windows).
InputSlot = tuple[int, WindowStats, "RecordFilter | None", bool]


class Clock:
    """Hold the watermark, the newest timestamp per partition, and the records waiting for release."""

    def __init__(
        self,
        names: Sequence[str],
        inputs: Mapping[str, InputSlot],
        lateness: float,
        partitions: Mapping[str, Iterable[int]] | None,
        journal: Journal | None,
    ) -> None:
        self._index = {s: i for i, s in enumerate(names)}
        self._inputs = dict(inputs)
        self._lateness = lateness
        self._journal = journal
        self.max_ts: dict[tuple[int, int], float | None] = {}
        self.idle: set[tuple[int, int]] = set()
        for stream, parts in (partitions or {s: [0] for s in names}).items():
            for p in parts:
                self.max_ts[(self._index[stream], p)] = None
        # Buffered records, in arrival order. A list, not a heap: the joiner adds a fetch topic by
        # topic, so most records arrive out of order, and one stable sort per release (C, merging a
        # few sorted runs) costs far less than a heap push and pop per record. `_buffer_sorted`
        # stays True while arrivals keep timestamp order (`_buffer_tail_ts`: the newest so far).
        self.buffer: list[Entry] = []
        self._buffer_tail_ts = _NEG_INF
        self._buffer_sorted = True
        self.watermark = _NEG_INF
        self.closed = False
        """True when records at the watermark itself are released too (an idle flush): a record
        arriving at it is late."""
        self.all_idle = False
        """True while every partition is idle (the watermark was flushed; the next arrival resumes)."""
        self._accepted_from = _NEG_INF  # the smallest timestamp that is not late
        self._lowest_max: float | None = None  # the smallest newest-timestamp among active partitions

    # -- partitions -------------------------------------------------------------------------

    def assign(self, stream: str, partitions: Iterable[int]) -> None:
        """Declare partitions of `stream` (each holds the watermark until it has seen a record)."""
        i = self._index[stream]
        for p in partitions:
            self.max_ts.setdefault((i, p), None)
        self.update_watermark()

    def set_idle(self, stream: str, partition: int, idle: bool) -> None:
        """Mark a partition idle (it stops holding the watermark back) or active again."""
        key = (self._index[stream], partition)
        if idle:
            self.idle.add(key)
        else:
            self.idle.discard(key)
        self.update_watermark()

    def is_idle(self, stream: str, partition: int) -> bool:
        """Return True if `partition` of `stream` is idle (it does not hold the watermark back)."""
        return (self._index[stream], partition) in self.idle

    def _resume(self) -> None:
        """Input resumes after an idle flush: every partition holds the watermark again."""
        self.idle.clear()
        self.update_watermark()

    def observe(self, stream: str, partition: int, ts: float) -> None:
        """Note that `partition` of `stream` has sent everything up to `ts` (a progress marker of a
        re-keyed input): its clock moves as a record at `ts` would move it, and it is active again."""
        if self.all_idle:
            self._resume()
        key = (self._index[stream], partition)
        seen = self.max_ts.get(key, _NEG_INF)
        if seen is None or ts > seen:
            self.max_ts[key] = ts
        elif key not in self.idle:
            return
        self.idle.discard(key)
        self.update_watermark()

    # -- arrivals ---------------------------------------------------------------------------

    def add(
        self,
        stream: str,
        record: Mapping[str, Any],
        ts: float,
        partition: int,
        offset: int,
        size: int,
        extra: Any,
    ) -> bool:
        """Buffer one arriving record; return False when it is late (counted, never joined)."""
        i, stats, passes, keep_filtered = self._inputs[stream]
        stats.arrivals += 1
        if stats.first_ts is None:
            stats.first_ts = ts
        last_ts = stats.last_ts
        if last_ts is None or ts > last_ts:
            stats.last_ts = ts
        if self.all_idle:  # the first arrival after an idle flush
            self._resume()
        if ts < self._accepted_from:  # the watermark before this record: late means below it on arrival
            stats.late += 1
            return False
        key = (i, partition)
        max_ts = self.max_ts
        seen = max_ts.get(key, _NEG_INF)
        if seen is None or ts > seen:
            max_ts[key] = ts
            # Only the partition(s) holding the watermark back can move it.
            lowest = self._lowest_max
            if seen is None or lowest is None or seen <= lowest or key in self.idle:
                self.idle.discard(key)
                self.update_watermark()
        elif key in self.idle:
            self.idle.discard(key)
            self.update_watermark()
        entry = Entry(i, partition, offset, ts, record, size, extra)
        if passes is not None and not passes(record):
            stats.filtered += 1
            if not keep_filtered:
                return True  # a filter may be pushed below a range window: the record can never join
            entry.passes = False
        self.buffer.append(entry)
        if ts >= self._buffer_tail_ts:  # in timestamp order: the common case
            self._buffer_tail_ts = ts
        else:
            self._buffer_sorted = False
        journal = self._journal
        if journal is not None:
            journal.added.append(entry)
        return True

    def update_watermark(self) -> None:
        """Recompute the watermark from the newest timestamp of every active partition."""
        idle = self.idle
        lowest: float | None = None
        any_active = False
        for key, ts in self.max_ts.items():
            if idle and key in idle:
                continue
            if ts is None:  # a partition that has not seen a record holds the watermark back
                self.all_idle = False
                self._lowest_max = None
                return
            any_active = True
            if lowest is None or ts < lowest:
                lowest = ts
        self.all_idle = not any_active and bool(self.max_ts)
        if self.all_idle:
            # Every partition idle: nothing active will move the watermark, so it goes to the
            # largest newest timestamp (Flink's valve flushes the same way), lateness or not, and
            # is closed: everything held is joined, those at the largest timestamp included.
            newest = max((ts for ts in self.max_ts.values() if ts is not None), default=None)
            self._lowest_max = newest
            if newest is not None and (newest > self.watermark or not self.closed):
                self._set_watermark(max(newest, self.watermark), closed=True)
            return
        self._lowest_max = lowest
        if lowest is not None and lowest - self._lateness > self.watermark:
            self._set_watermark(lowest - self._lateness, closed=False)

    def _set_watermark(self, watermark: float, *, closed: bool) -> None:
        self.watermark = watermark
        self.closed = closed
        # Closed: the smallest timestamp above the watermark is the first one that is not late.
        self._accepted_from = math.nextafter(watermark, math.inf) if closed else watermark

    # -- release ----------------------------------------------------------------------------

    def take_released(self, bound: float, inclusive: bool) -> list[Entry]:
        """Pop the buffered records below `bound` (or at it, `inclusive`), in timestamp order.

        Ties keep their arrival order (the sort is stable): count windows order equal timestamps by
        arrival, and a restored checkpoint's waiting records count as the earliest arrivals.
        """
        buffer = self.buffer
        if not buffer:
            return []
        if not self._buffer_sorted:
            buffer.sort(key=_ts)  # a few sorted runs (one per topic-partition of a fetch): merged in C
            self._buffer_sorted = True
        if buffer[-1].ts < bound or (inclusive and buffer[-1].ts == bound):
            self.buffer = []
            self._buffer_tail_ts = _NEG_INF
            return buffer
        cut = (bisect_right if inclusive else bisect_left)(buffer, bound, key=_ts)
        released = buffer[:cut]
        del buffer[:cut]
        return released

    def push_front(self, waiting: Sequence[Entry]) -> None:
        """Put restored waiting records ahead of every new arrival (sorted by timestamp)."""
        if waiting:
            self.buffer = [*waiting, *self.buffer]
            self._buffer_sorted = False
            self._buffer_tail_ts = max(self._buffer_tail_ts, waiting[-1].ts)

    # -- checkpoints ------------------------------------------------------------------------

    def scalars(self) -> dict[str, Any]:
        """Return the clock's part of a checkpoint's scalars."""
        return {
            "watermark": self.watermark,
            "closed": self.closed,
            "max_ts": [[i, p, ts] for (i, p), ts in self.max_ts.items()],
            "idle": [list(key) for key in self.idle],
        }

    def restore(self, scalars: Mapping[str, Any]) -> None:
        """Restore the watermark and partition clocks of `scalars`."""
        self._set_watermark(float(scalars["watermark"]), closed=bool(scalars.get("closed", False)))
        for i, p, ts in scalars["max_ts"]:
            self.max_ts[(int(i), int(p))] = ts
        self.idle = {(int(i), int(p)) for i, p in scalars["idle"]}
        self.update_watermark()
