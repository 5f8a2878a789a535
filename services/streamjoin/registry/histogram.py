"""The processing-latency histogram a joiner publishes in its operator statistics.

The JSON form is Prometheus' own: cumulative bucket counts by upper bound (seconds), plus sum and
count, so the control plane exports it as a histogram without re-bucketing.

>>> h = LatencyHistogram(bounds=(0.01, 0.1))
>>> for seconds in (0.005, 0.05, 3.0):
...     h.observe(seconds)
>>> h.as_json()
{'buckets': [[0.01, 1], [0.1, 2], ['+Inf', 3]], 'sum': 3.055, 'count': 3}
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DEFAULT_LATENCY_BOUNDS", "LatencyHistogram", "parse_histogram"]

DEFAULT_LATENCY_BOUNDS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
"""Upper bounds in seconds; +Inf is implied."""


class LatencyHistogram:
    """Count observed latencies (seconds) into fixed buckets; not thread-safe, one per partition."""

    __slots__ = ("_bounds", "_counts", "_sum")

    def __init__(self, bounds: Sequence[float] = DEFAULT_LATENCY_BOUNDS) -> None:
        """Create an empty histogram.

        Args:
            bounds: strictly increasing, finite upper bounds in seconds.
        """
        if not bounds or any(not math.isfinite(b) for b in bounds) or list(bounds) != sorted(set(bounds)):
            raise ValueError("bounds must be strictly increasing finite numbers")
        self._bounds = tuple(float(b) for b in bounds)
        self._counts = [0] * (len(self._bounds) + 1)
        self._sum = 0.0

    def observe(self, seconds: float, count: int = 1) -> None:
        """Record `count` observations of `seconds` (e.g. every result of one batch)."""
        self._counts[bisect.bisect_left(self._bounds, seconds)] += count
        self._sum += seconds * count

    def as_json(self) -> dict[str, Any]:
        """Return the cumulative JSON form stored under `latency_seconds`."""
        buckets: list[list[object]] = []
        running = 0
        bounds: tuple[float | str, ...] = (*self._bounds, "+Inf")
        for bound, n in zip(bounds, self._counts, strict=True):
            running += n
            buckets.append([bound, running])
        return {"buckets": buckets, "sum": round(self._sum, 9), "count": running}


def parse_histogram(raw: object) -> tuple[list[tuple[str, float]], float] | None:
    """Return `([(le, cumulative count), ...], sum)` from the JSON form, or None if it is malformed.

    The `le` strings are formatted the way Prometheus clients do ("0.1", "+Inf"); a missing
    +Inf bucket is added with `count`.
    """
    if not isinstance(raw, Mapping):
        return None
    buckets = raw.get("buckets")
    total = raw.get("sum", 0.0)
    if not isinstance(buckets, list) or not isinstance(total, int | float):
        return None
    out: list[tuple[str, float]] = []
    for item in buckets:
        if not isinstance(item, list | tuple) or len(item) != 2 or not isinstance(item[1], int | float):
            return None
        bound, count = item
        if bound == "+Inf" or (isinstance(bound, float) and math.isinf(bound)):
            out.append(("+Inf", float(count)))
        elif isinstance(bound, int | float) and not isinstance(bound, bool):
            out.append((_format_bound(float(bound)), float(count)))
        else:
            return None
    if not out or out[-1][0] != "+Inf":
        count = raw.get("count")
        if not isinstance(count, int | float):
            return None
        out.append(("+Inf", float(count)))
    return out, float(total)


def _format_bound(bound: float) -> str:
    return repr(bound)
