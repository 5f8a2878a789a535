"""The reference simulator of the paper's discrete-time model, exact or under a policy.

At each instant, in this order (an online policy must never beat the offline optimum):

1. expire: every window drops the records out of it at `now` (`ShedInstance.until`: a range window
   those older than its range, a count window those with `N` newer records of their group);
2. every record of the instant arrives (`policy.arrive`), then each is admitted into its window;
   a window over its share asks the policy for a victim among its entries, the arriving one
   included, and drops it;
3. each record of the instant probes the retained *older* records of the other windows, and the
   records of the instant join each other whether retained or not: a result is one record per
   window, every `where` predicate holding, at least one member arriving now, every other member
   retained;
4. `policy.end_instant` with the number of results each retained older record took part in.

A record dropped or evicted joins nothing later. With no capacity the output is the exact result
(the oracle's, for records in timestamp order).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamjoin.query.model import FieldRef, Operand, Predicate
from streamjoin.query.predicates import MISSING, compare
from streamjoin.shedding.entry import ShedEntry
from streamjoin.shedding.instance import ShedInstance
from streamjoin.shedding.policy import SheddingPolicy
from streamjoin.shedding.runtime import WindowShedder

__all__ = ["Outcome", "ShedResult", "simulate"]


@dataclass(frozen=True, slots=True)
class ShedResult:
    """One result: the `seq` of its member in each window, its importance, its instant's index."""

    members: tuple[int, ...]
    importance: float
    instant: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run produced, and how many records it dropped or evicted."""

    results: tuple[ShedResult, ...]
    shed: int

    @property
    def importance(self) -> float:
        """Return the total importance of the results."""
        return math.fsum(r.importance for r in self.results)


def _value(operand: Operand, names: Sequence[str], combo: Sequence[Mapping[str, Any]]) -> Any:
    if isinstance(operand, FieldRef):
        return combo[names.index(operand.stream)].get(operand.field, MISSING)
    return operand


def _holds(predicate: Predicate, names: Sequence[str], combo: Sequence[Mapping[str, Any]]) -> bool:
    left = _value(predicate.left, names, combo)
    right = _value(predicate.right, names, combo)
    return compare(predicate.op, left, right)


class _Prober:
    """Enumerate the results of one instant (nested loops, predicates checked as early as possible)."""

    def __init__(self, instance: ShedInstance) -> None:
        self._instance = instance
        self._names = instance.query.stream_names
        self._checked_at: list[list[Predicate]] = [[] for _ in self._names]
        for p in instance.query.where:
            self._checked_at[max(self._names.index(s) for s in p.streams)].append(p)

    def results(
        self, index: int, new: Sequence[Sequence[ShedEntry]], old: Sequence[Sequence[ShedEntry]]
    ) -> list[ShedResult]:
        records = self._instance.records
        combine = self._instance.factory.combine
        n = len(self._names)
        out: list[ShedResult] = []
        chosen: list[ShedEntry] = []
        combo: list[Mapping[str, Any]] = []
        # new_after[d]: some window from d on has a record of this instant.
        new_after = [False] * (n + 1)
        for d in range(n - 1, -1, -1):
            new_after[d] = new_after[d + 1] or bool(new[d])

        def extend(depth: int, fresh: bool) -> None:
            if depth == n:
                members = tuple(e.seq for e in chosen)
                out.append(ShedResult(members, combine([e.importance for e in chosen]), index))
                return
            if not fresh and not new_after[depth]:
                return  # only older records left to choose: that result was produced before
            groups = [(True, new[depth])]
            if fresh or new_after[depth + 1]:
                groups.append((False, old[depth]))
            for is_new, group in groups:
                for entry in group:
                    chosen.append(entry)
                    combo.append(records[entry.seq])
                    if all(_holds(p, self._names, combo) for p in self._checked_at[depth]):
                        extend(depth + 1, fresh or is_new)
                    chosen.pop()
                    combo.pop()

        extend(0, False)
        return out


def simulate(
    instance: ShedInstance, policy: SheddingPolicy | None = None, share: int | None = None
) -> Outcome:
    """Run `instance` with at most `share` records per window, evicting by `policy`.

    With `share` None (or a policy never asked because no window overflows) nothing is shed and
    the outcome is the exact result.
    """
    if (policy is None) != (share is None):
        raise ValueError("give both a policy and a share, or neither")
    shedder = None if policy is None or share is None else WindowShedder(policy, share)
    windows: list[dict[int, ShedEntry]] = [{} for _ in range(instance.windows)]
    prober = _Prober(instance)
    results: list[ShedResult] = []
    shed = 0
    until = instance.until
    for index, instant in enumerate(instance.instants):
        now = instant.now
        for window in windows:
            for entry in [e for e in window.values() if until[e.seq] < index]:
                del window[entry.seq]
                if shedder is not None:
                    shedder.expired(entry)
        # A count window's record that newer records of this instant already pushed out never enters.
        arrivals = [e for e in instant.arrivals if until[e.seq] >= index]
        arriving = {e.seq for e in arrivals}
        if shedder is not None:
            for entry in arrivals:
                shedder.arrive(entry, now)
        for entry in arrivals:
            window = windows[entry.window]
            window[entry.seq] = entry
            if shedder is not None:
                for victim in shedder.admit(entry, tuple(window.values()), now):
                    del window[victim.seq]
                    shed += 1
        new: list[list[ShedEntry]] = [[] for _ in windows]
        for entry in arrivals:
            new[entry.window].append(entry)
        old = [[e for e in window.values() if e.seq not in arriving] for window in windows]
        found = prober.results(index, new, old)
        results.extend(found)
        if shedder is not None:
            produced: Counter[int] = Counter()
            for result in found:
                produced.update(seq for seq in result.members if seq not in arriving)
            shedder.end_instant(now, produced)
    return Outcome(tuple(results), shed)
