"""Whether the lag stayed flat: the workers kept up with the input over the end of a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LagTrend", "lag_trend"]


@dataclass(frozen=True)
class LagTrend:
    """The lag (records produced, not yet committed) over a window of a run."""

    from_s: float
    to_s: float
    samples: int
    mean: float
    max: int
    first_minute_mean: float
    last_minute_mean: float
    slope_per_s: float
    """Least-squares growth of the lag, records per second."""
    rate: float

    @property
    def flat(self) -> bool:
        """Whether the backlog grew by less than one second of input over the whole window."""
        return self.samples > 1 and self.slope_per_s * (self.to_s - self.from_s) < self.rate

    def as_json(self) -> dict[str, Any]:
        """Return the figures as JSON-ready data."""
        return {
            "from_s": round(self.from_s, 1),
            "to_s": round(self.to_s, 1),
            "samples": self.samples,
            "mean": round(self.mean, 1),
            "max": self.max,
            "first_minute_mean": round(self.first_minute_mean, 1),
            "last_minute_mean": round(self.last_minute_mean, 1),
            "slope_records_per_s": round(self.slope_per_s, 3),
            "flat": self.flat,
        }


def lag_trend(
    lag: Sequence[tuple[float, int | None]], *, from_s: float, to_s: float, rate: float
) -> LagTrend:
    """Return the trend of the samples taken in `[from_s, to_s]` (samples without a value are skipped)."""
    points = [(t, n) for t, n in lag if n is not None and from_s <= t <= to_s]
    if not points:
        return LagTrend(from_s, to_s, 0, 0.0, 0, 0.0, 0.0, 0.0, rate)
    ts = [t for t, _ in points]
    ns = [n for _, n in points]
    mean_t, mean_n = sum(ts) / len(ts), sum(ns) / len(ns)
    var = sum((t - mean_t) ** 2 for t in ts)
    slope = sum((t - mean_t) * (n - mean_n) for t, n in points) / var if var > 0 else 0.0
    first = [n for t, n in points if t < from_s + 60] or [0]
    last = [n for t, n in points if t > to_s - 60] or [0]
    return LagTrend(from_s, to_s, len(points), mean_n, max(ns), sum(first) / len(first),
                    sum(last) / len(last), slope, rate)  # fmt: skip
