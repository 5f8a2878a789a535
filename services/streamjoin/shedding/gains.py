"""What retaining a record is worth: the exact results split over the older members they need.

A result produced at instant k needs every member that arrived before k (its *older* members)
to be retained at k; members arriving at k join whatever happens. `Gains` holds, for every
(record, instant), the importance (and count) of the results that need that record there, each
result divided evenly among its older members. With two inputs every result needs at most one
older member, so a window's retention plan earns exactly its results and the windows are
independent (the paper's R, S and SA subgraphs). With more inputs a plan earns at least what the
results it produces are worth, so the sum over windows is an upper bound.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from streamjoin.shedding.instance import ShedInstance
from streamjoin.shedding.simulate import ShedResult

__all__ = ["Gains", "produced_by_plan"]


@dataclass(slots=True)
class Gains:
    """Gains of retention per (seq, instant index), and the results no retention decides."""

    importance: dict[tuple[int, int], float] = field(default_factory=lambda: defaultdict(float))
    count: dict[tuple[int, int], float] = field(default_factory=lambda: defaultdict(float))
    points: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    free: list[ShedResult] = field(default_factory=list)

    @classmethod
    def of(cls, instance: ShedInstance, exact: Iterable[ShedResult]) -> Gains:
        """Return the gains of `instance` given its exact results."""
        gains = cls()
        for result in exact:
            older = [s for s in result.members if instance.instant_of[s] < result.instant]
            if not older:
                gains.free.append(result)
                continue
            for seq in older:
                key = (seq, result.instant)
                if key not in gains.importance:
                    gains.points[seq].append(result.instant)
                gains.importance[key] += result.importance / len(older)
                gains.count[key] += 1 / len(older)
        for instants in gains.points.values():
            instants.sort()
        return gains


def produced_by_plan(
    instance: ShedInstance, exact: Sequence[ShedResult], held: set[tuple[int, int]]
) -> tuple[int, float]:
    """Return (results, importance) of the exact results whose older members are all in `held`."""
    kept = [
        r
        for r in exact
        if all((s, r.instant) in held for s in r.members if instance.instant_of[s] < r.instant)
    ]
    return len(kept), math.fsum(r.importance for r in kept)
