"""Statistics the planner is fed: per-stream parameters and the estimators that observe them.

Everything here is pure and deterministic: no clocks, no I/O. Rates are driven by the records'
event-time timestamps, in the query's timestamp unit (the unit of `RangeWindow.range`), so a
replay and a live run of the same input observe the same statistics.
"""

from __future__ import annotations

import hashlib
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

__all__ = ["EdgeSelectivity", "ExponentialRate", "HyperLogLog", "StreamStats"]


@dataclass(frozen=True, slots=True)
class StreamStats:
    """The cost-model parameters of one input stream (Golab & Özsu, Table 1).

    Args:
        name: the input stream name.
        rate: arrival rate `lambda`, records per time unit.
        window: time size `T` of a range window (records held: `rate * window`).
        rows: size of a rows window in records; replaces `rate * window` when set.
        distinct: distinct join-key values `v` in the window (the default for every join field).
        buckets: hash buckets `b` scanned per probe; `None` lets the planner derive it from the
            query's algorithm (1 for `nlj`, one bucket per distinct key for `hash`).
        distinct_fields: distinct values per join field, for joins on different attributes.
    """

    name: str
    rate: float
    window: float | None = None
    rows: int | None = None
    distinct: float = 1.0
    buckets: float | None = None
    distinct_fields: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a stream needs a non-empty name")
        if not _finite(self.rate) or self.rate < 0:
            raise ValueError(f"{self.name}: rate must be a finite number >= 0")
        if (self.window is None) == (self.rows is None):
            raise ValueError(f"{self.name}: give exactly one of window (time) or rows (records)")
        if self.window is not None and (not _finite(self.window) or self.window <= 0):
            raise ValueError(f"{self.name}: window must be a finite number > 0")
        if self.rows is not None and self.rows <= 0:
            raise ValueError(f"{self.name}: rows must be > 0")
        for label, value in (("distinct", self.distinct), *self.distinct_fields.items()):
            if not _finite(value) or value < 1:
                raise ValueError(f"{self.name}: distinct count {label!r} must be a finite number >= 1")
        if self.buckets is not None and (not _finite(self.buckets) or self.buckets < 1):
            raise ValueError(f"{self.name}: buckets must be a finite number >= 1")

    @property
    def records(self) -> float:
        """Return the window's size in records: `rows`, else `rate * window`."""
        if self.rows is not None:
            return float(self.rows)
        return self.rate * (self.window if self.window is not None else 0.0)

    def distinct_of(self, field_name: str | None) -> float:
        """Return the distinct count of `field_name` (or of the default join key)."""
        if field_name is None:
            return self.distinct
        return self.distinct_fields.get(field_name, self.distinct)


def _finite(value: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class ExponentialRate:
    """Estimate an arrival rate with exponential decay, driven by event-time timestamps.

    The decayed count `c(t) = sum_k exp(-(t - t_k) / scale)` of a stream with constant rate
    `lambda` tends to `lambda * scale`; the estimate divides by the mass the kernel has had since the
    first record, `scale * (1 - exp(-(t - t_0) / scale))`, so it is unbiased from the start. A record
    older than the newest one seen (disorder) is added with its decayed weight. `half_life` is in
    timestamp units: after a step change the estimate has covered half the step after one half-life.
    """

    __slots__ = ("_count", "_first", "_first_count", "_last", "_scale")

    def __init__(self, half_life: float) -> None:
        if not _finite(half_life) or half_life <= 0:
            raise ValueError("half_life must be a finite number > 0")
        self._scale = half_life / math.log(2)
        self._count = 0.0
        self._first_count = 0.0
        self._first: float | None = None
        self._last: float | None = None

    @property
    def half_life(self) -> float:
        """Return the half-life in timestamp units."""
        return self._scale * math.log(2)

    def observe(self, ts: float, count: float = 1.0) -> None:
        """Count `count` records arriving at event time `ts`."""
        if ts == self._last:  # records sharing a timestamp (common): no decay between them
            self._count += count
            return
        if self._last is None or self._first is None:
            self._first = self._last = ts
            self._count = self._first_count = count
            return
        if ts >= self._last:
            self._count = self._count * math.exp(-(ts - self._last) / self._scale) + count
            self._last = ts
        else:
            self._count += count * math.exp(-(self._last - ts) / self._scale)
        self._first = min(self._first, ts)

    def observe_many(self, timestamps: Sequence[float]) -> None:
        """Count one record at each of `timestamps`, in any order: what `observe` of each in turn
        counts, with one decay for all of them and no Python code per record.

        Decay is multiplicative, so a record at `t` weighs `exp(-(newest - t) / scale)` once the
        newest record is seen, whichever order they came in.
        """
        if not timestamps:
            return
        if self._last is None or self._first is None:  # the first record opens the span
            self.observe(timestamps[0])
            self.observe_many(timestamps[1:])
            return
        last, first = self._last, self._first
        newest = max(last, max(timestamps))
        scale = self._scale
        ages = map(operator.sub, timestamps, repeat(newest))  # <= 0
        weights = map(math.exp, map(operator.truediv, ages, repeat(scale)))
        self._count = self._count * math.exp((last - newest) / scale) + sum(weights)
        self._last = newest
        self._first = min(first, min(timestamps))

    def rate(self, now: float | None = None) -> float:
        """Return the estimated rate (records per time unit) at `now` (default: the newest record)."""
        if self._last is None or self._first is None:
            return 0.0
        at = self._last if now is None else max(now, self._last)
        count = self._count * math.exp(-(at - self._last) / self._scale)
        span = at - self._first
        if span <= 0:
            return 0.0
        # The records at t_0 only open the observation span: take their weight out, and divide the
        # rest by the kernel's mass over the span, so a constant rate is estimated without bias.
        decay = math.exp(-span / self._scale)
        mass = self._scale * (1.0 - decay)
        return max(count - self._first_count * decay, 0.0) / mass


class HyperLogLog:
    """Count distinct values approximately in `2**p` bytes (Flajolet et al., 2007).

    The default p = 14 is Redis's (16 KiB, standard error 1.04 / sqrt(16384) = 0.8%); the collector's
    sliding sketches use p = 12 (4 KiB, 1.6%), plenty for a planner.

    Values are hashed to 64 bits, stably across processes (integers with splitmix64's finaliser,
    anything else with BLAKE2b). Numbers that compare equal in Python (`1`, `1.0`, `True`) hash
    alike, as they match alike in a join. Small counts use linear counting.
    """

    __slots__ = ("_p", "_registers")

    def __init__(self, p: int = 14) -> None:
        if not 4 <= p <= 18:
            raise ValueError("precision p must be between 4 and 18")
        self._p = p
        self._registers = bytearray(1 << p)

    @property
    def p(self) -> int:
        """Return the precision: the sketch has 2**p registers."""
        return self._p

    def add(self, value: object) -> None:
        """Add one value to the set."""
        self.add_many((value,))

    def add_many(self, values: Iterable[object]) -> None:
        """Add each of `values` to the set."""
        registers, shift = self._registers, 64 - self._p
        low = (1 << shift) - 1
        for value in values:
            # `_hash64` of an integer, inline (join keys mostly are; the call was a third of this loop)
            if type(value) is int:
                z = (value + 0x9E3779B97F4A7C15) & _MASK64
                z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
                z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
                h = z ^ (z >> 31)
            else:
                h = _hash64(value)
            rank = shift - (h & low).bit_length() + 1
            index = h >> shift
            if rank > registers[index]:
                registers[index] = rank

    def count(self) -> float:
        """Return the estimated number of distinct values added."""
        m = len(self._registers)
        alpha = 0.7213 / (1 + 1.079 / m)
        estimate = alpha * m * m / sum(map(_POWERS.__getitem__, self._registers))
        zeros = self._registers.count(0)
        if estimate <= 2.5 * m and zeros:
            return m * math.log(m / zeros)
        return estimate

    def merge(self, other: HyperLogLog) -> None:
        """Add every value of `other` (same precision) to this sketch."""
        if other.p != self._p:
            raise ValueError(f"cannot merge precision {other.p} into {self._p}")
        self._registers = _byte_max(self._registers, other._registers)

    def copy(self) -> HyperLogLog:
        """Return an independent copy of this sketch."""
        clone = HyperLogLog(self._p)
        clone._registers = bytearray(self._registers)
        return clone


def _byte_max(a: bytearray, b: bytearray) -> bytearray:
    """Return the bytewise maximum of two equal-length arrays of values below 128, as big integers.

    Per byte, `(x | 0x80) - y` never borrows from the next byte and keeps its high bit exactly when
    x >= y; that bit, spread over the byte, selects x or y. (A Python loop over 16,384 registers
    took 4 ms a merge; merging a 24-input query's sketches stalled the joiner's loop 0.3 s.)
    """
    n = len(a)
    x, y = int.from_bytes(a, "little"), int.from_bytes(b, "little")
    high = int.from_bytes(b"\x80" * n, "little")
    mask = ((((x | high) - y) & high) >> 7) * 0xFF
    return bytearray(((x & mask) | (y & ~mask)).to_bytes(n, "little"))


_POWERS = tuple(2.0**-k for k in range(66))
_MASK64 = (1 << 64) - 1


def _hash64(value: object) -> int:
    """Return a 64-bit hash, stable across processes (unlike `hash` of a string)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):  # bool included: True == 1 joins like 1
        # splitmix64's finaliser: a few integer operations instead of a cryptographic hash.
        z = (value + 0x9E3779B97F4A7C15) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)
    data = f"{type(value).__name__}:{value!r}".encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


class EdgeSelectivity:
    """Accumulate the observed selectivity of one join edge: matching pairs / compared pairs.

    `decay` (0 < decay <= 1) weights older observations: each `record` first multiplies the totals
    by it, so 1.0 keeps a plain running ratio.
    """

    __slots__ = ("_compared", "_decay", "_matched")

    def __init__(self, decay: float = 1.0) -> None:
        if not 0 < decay <= 1:
            raise ValueError("decay must be in (0, 1]")
        self._decay = decay
        self._compared = 0.0
        self._matched = 0.0

    def record(self, compared: float, matched: float) -> None:
        """Count `compared` candidate pairs of which `matched` satisfied the predicate."""
        if compared < 0 or matched < 0 or matched > compared:
            raise ValueError("need 0 <= matched <= compared")
        self._compared = self._compared * self._decay + compared
        self._matched = self._matched * self._decay + matched

    @property
    def selectivity(self) -> float | None:
        """Return matched / compared, or None before any pair was compared."""
        if self._compared <= 0:
            return None
        return self._matched / self._compared
