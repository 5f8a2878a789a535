"""Kostowski & Claypool's invalidation strategies: which buckets are cleaned on each arrival.

Three `Expiration` strategies beside eager and lazy (`schedule.py`), registered in `EXPIRATIONS`:

- `probe`: only the bucket about to be probed (the required minimum; stale records pile up in
  buckets a slow stream rarely probes: about `lambda_B / lambda_A` per probed bucket);
- `probe_insert`: that bucket and the arriving record's own bucket (about one stale record per bucket);
- `probe_all`: the whole window about to be probed (every bucket of the probe side), none on insert.

The greedy "optimal" strategy of the paper (every bucket of both sides) is `eager`.

Each wraps a range window's store (`ProbeCleanedWindow`): `bucket()` and `scan()` clean before they
return, `index()` returns None so the exact-index fast path (which reads buckets directly) is not
used, and `expire(now)` only moves the strategy's clock. The clock is the timestamp no record joined
from now on is older than (the current timestamp group when eager, the last released timestamp after
a lazy batch), so a bucket is only ever cleaned of what nothing can join again. Windows may hold
expired records (`holds_expired`), so the admission closures test timestamps: a probe never joins an
expired record, whatever was cleaned. Count windows, and stores without bucket-level expiry, keep
the eager strategy (they are cleaned before every timestamp group).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamjoin.engine.schedule import EXPIRATIONS, EagerExpiration
from streamjoin.engine.stats import WindowStats
from streamjoin.engine.window import MemoryWindowTable, WindowStore
from streamjoin.query.model import InputDef, QueryDef, RangeWindow

__all__ = [
    "ProbeAllExpiration",
    "ProbeCleanedWindow",
    "ProbeExpiration",
    "ProbeInsertExpiration",
    "StrategyClock",
]


class StrategyClock:
    """The timestamp below which a bucket may be cleaned (never moves back)."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = -math.inf

    def advance(self, now: float) -> None:
        """Move the clock to `now` if it is later."""
        if now > self.now:
            self.now = now


class ProbeCleanedWindow:
    """A range window store cleaned where it is probed (a bucket, or all of it) and on insert."""

    expires_at = -math.inf  # every timestamp group calls `expire`, which moves the clock

    def __init__(
        self, table: MemoryWindowTable, clock: StrategyClock, *, whole: bool, on_insert: bool
    ) -> None:
        self._table = table
        self._clock = clock
        self._whole = whole  # clean the whole window on a probe (probe_all), else the probed bucket
        self._on_insert = on_insert
        self._fields = list(table.index_fields)
        self.definition: InputDef = table.definition
        self.stats: WindowStats = table.stats
        self.probed = 0  # buckets probed (bench/window_models.py reads these two)
        self.stale_found = 0  # expired records found in them

    @property
    def expired_log(self) -> list[Any] | None:
        """Return where the table logs what leaves it (the journal's list, or None)."""
        return self._table.expired_log

    @expired_log.setter
    def expired_log(self, log: list[Any] | None) -> None:
        self._table.expired_log = log

    def insert(self, entry: Any) -> None:
        """Clean the record's own bucket(s) (probe_insert), then insert it."""
        table = self._table
        if self._on_insert:
            now = self._clock.now
            for field in self._fields:
                table.expire_bucket(field, entry.record[field], now)
        table.insert(entry)

    def bucket(self, field: str, value: Any) -> Sequence[Any]:
        """Clean, then return the bucket of `value`."""
        table = self._table
        self.probed += 1
        if self._whole:
            self.stale_found += table.expire(self._clock.now)
        else:
            self.stale_found += table.expire_bucket(field, value, self._clock.now)
        return table.bucket(field, value)

    def scan(self) -> Iterable[Any]:
        """Clean the whole window (a scan probes every bucket), then return it."""
        table = self._table
        table.expire(self._clock.now)
        return table.scan()

    def index(self, field: str) -> Mapping[Any, Sequence[Any]] | None:
        """Return None: probes must go through `bucket`, which cleans."""
        return None

    def expire(self, now: float) -> int:
        """Move the clock to `now`; nothing is cleaned until a bucket is probed."""
        self._clock.advance(now)
        return 0

    def evict(self, entry: Any) -> None:
        """Remove `entry` (load shedding)."""
        self._table.evict(entry)

    def distinct_keys(self) -> int:
        """Return the number of distinct values of the first indexed attribute."""
        return self._table.distinct_keys()

    def __len__(self) -> int:
        return len(self._table)


class _BucketScoped(EagerExpiration):
    """What the three strategies share: windows may hold expired records; a clock; the wrapper.

    Every window is handed to the group (`per_group`) and expired after the join as under eager
    expiration (`EagerExpiration`): a wrapped store's `expire` only moves the strategies' clock, a
    store that is not wrapped (count windows, other stores) is cleaned eagerly."""

    holds_expired = True
    _whole = False
    _on_insert = False

    def __init__(self, query: QueryDef) -> None:
        del query
        self._clock = StrategyClock()

    def store(self, table: WindowStore) -> WindowStore:
        """Wrap a range window's in-memory store; others stay as they are (cleaned eagerly)."""
        if isinstance(table, MemoryWindowTable) and isinstance(table.definition.window, RangeWindow):
            return ProbeCleanedWindow(table, self._clock, whole=self._whole, on_insert=self._on_insert)
        return table


class ProbeExpiration(_BucketScoped):
    """Clean only the bucket about to be probed (Kostowski's probe-time invalidation)."""


class ProbeInsertExpiration(_BucketScoped):
    """Clean the probed bucket and the arriving record's own bucket (probe and insert time)."""

    _on_insert = True


class ProbeAllExpiration(_BucketScoped):
    """Clean every bucket of the window about to be probed, none on insert (probe all buckets)."""

    _whole = True


EXPIRATIONS["probe"] = ProbeExpiration
EXPIRATIONS["probe_insert"] = ProbeInsertExpiration
EXPIRATIONS["probe_all"] = ProbeAllExpiration
