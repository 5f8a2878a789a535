"""How long results paused around a fault, and how long the workers took to catch up again.

Each output record carries the time the broker appended it (the runner creates the output topic with
`message.timestamp.type=LogAppendTime`; the embedded Tansu keeps the producer's time instead), so the
gaps between consecutive results are read from the output itself after the run, on the machine's one
clock. For a fault lasting from `at_s` to `ended_s` (seconds since production started):

- `longest_s`: the longest gap between consecutive results, over every output partition, among the
  gaps overlapping the fault, with where it began and ended (`from_s`, `to_s`); production's start
  counts as a result (a gap from 0 s: none came before the fault);
- `longest_partition_s`: the same for one output partition alone (a cluster's surviving leaders
  may go on serving the other partitions);
- `before_s`: the longest gap in the 10 s before the fault, the ordinary rhythm of results;
- `recovered_s`: from `at_s` until the lag (records produced and not yet processed) first fell back
  to its level before the fault (the largest sample of the 10 s before it; 0 without one), after
  the pause; a drained run's last sample is 0.

>>> arrivals = [(t / 10, 0) for t in range(50)] + [(t / 10, 0) for t in range(120, 200)]
>>> lag = [(float(t), 100 if t < 5 or t > 15 else 5_000) for t in range(20)]
>>> (p,) = result_pauses(arrivals, [{"fault": "x", "at_s": 5.0, "ended_s": 6.0}], lag)
>>> [round(x, 1) for x in (p.longest_s, p.from_s, p.to_s, p.before_s, p.recovered_s or -1)]
[7.1, 4.9, 12.0, 0.1, 11.0]
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Pause", "result_pauses", "results_per_second"]

BEFORE_S = 10.0
"""How far before a fault its baseline (gaps, lag) is taken."""


@dataclass(frozen=True)
class Pause:
    """How results paused around one fault (see the module); times in seconds since production began."""

    fault: str
    at_s: float
    ended_s: float
    longest_s: float
    from_s: float
    to_s: float
    longest_partition_s: float
    partition: int
    before_s: float
    recovered_s: float | None

    def as_json(self) -> dict[str, Any]:
        """Return the pause as JSON-ready data, rounded to 0.1 s."""
        return {k: round(v, 1) if isinstance(v, float) else v for k, v in asdict(self).items()}


def _longest_gap(times: Sequence[float], start: float, end: float) -> tuple[float, float, float]:
    """Return (length, from, to) of the longest gap between consecutive `times` (sorted) that
    overlaps [start, end]; (0, start, start) when none does."""
    best = (0.0, start, start)
    first = max(bisect.bisect_left(times, start) - 1, 0)
    for a, b in zip(times[first:], times[first + 1 :], strict=False):
        if a > end:
            break
        if b > start and b - a > best[0]:
            best = (b - a, a, b)
    return best


def result_pauses(
    arrivals: Iterable[tuple[float, int]],
    faults: Sequence[Mapping[str, Any]],
    lag: Sequence[tuple[float, int | None]],
) -> list[Pause]:
    """Return the pause of results around each of `faults` (the runner's entries: `fault`, `at_s`,
    `ended_s`), from the results' arrivals (seconds since production began, output partition) and
    the lag samples (seconds, records; None where no sample could be taken)."""
    by_partition: dict[int, list[float]] = {}
    every: list[float] = [0.0]
    for t, partition in arrivals:
        every.append(t)
        by_partition.setdefault(partition, []).append(t)
    every.sort()
    for times in by_partition.values():
        times.insert(0, 0.0)
        times.sort()
    out = []
    for fault in faults:
        at, ended = float(fault["at_s"]), float(fault["ended_s"])
        longest, began, resumed = _longest_gap(every, at, ended)
        per_partition = [(_longest_gap(times, at, ended)[0], p) for p, times in by_partition.items()]
        partition_gap, partition = max(per_partition, default=(0.0, -1))
        before = _longest_gap(every[: bisect.bisect_left(every, at)], at - BEFORE_S, at)[0]
        level = max((n for t, n in lag if at - BEFORE_S <= t < at and n is not None), default=0)
        back = (t for t, n in lag if t >= max(resumed, at) and n is not None and n <= level)
        recovered = next((t - at for t in back), None)
        out.append(Pause(str(fault["fault"]), at, ended, longest, began, resumed, partition_gap, partition,
                         before, recovered))  # fmt: skip
    return out


def results_per_second(arrivals: Iterable[tuple[float, int]]) -> list[int]:
    """Return how many results arrived in each second since production began."""
    counts: list[int] = []
    for t, _partition in arrivals:
        second = max(int(t), 0)
        if second >= len(counts):
            counts.extend([0] * (second + 1 - len(counts)))
        counts[second] += 1
    return counts
