"""Per-window statistics: what the planner and the Control Tables read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["WindowStats"]


@dataclass(slots=True)
class WindowStats:
    """Counters of one input's window table.

    `records`, `bytes` and `distinct_keys` describe the window now; the others count since start.
    `first_ts`/`last_ts` span the event time seen, from which an arrival rate can be estimated.
    """

    records: int = 0
    bytes: int = 0
    distinct_keys: int = 0
    arrivals: int = 0
    inserts: int = 0
    expirations: int = 0
    probes: int = 0
    comparisons: int = 0
    results: int = 0
    late: int = 0
    filtered: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    shed: int | None = None  # with `shedding` (engine/shedding.py): records dropped or evicted
    importance: float | None = None  # with `shedding`: importance of the results it completed
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """Return the statistics as a plain dict (for JSON, metrics and Control Tables)."""
        return asdict(self)
