"""ODJA: the paper's optimal offline dynamic programme over join-memory states, one window at a time.

A state is the set of records a window holds after the admissions of an instant; from a state, the
next instant's successors are every way of keeping `share` records (or all, if fewer) among the
still-useful held records and the new arrivals. An edge earns the gains (`Gains`) of the held older
records at that instant; each state keeps its best (importance, results) from the start. Records
whose last gain is past are dropped from states (holding them can never earn anything), which keeps
the state space small; it is still exponential in the window, so this is for small instances (the
flow formulation, `streamjoin.shedding.flow`, scales).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import combinations

from streamjoin.shedding.gains import Gains
from streamjoin.shedding.instance import ShedInstance

__all__ = ["odja_window", "odja_work"]

_Path = tuple["_Path | None", int, frozenset[int]] | None


def _useful(instance: ShedInstance, gains: Gains, window: int) -> dict[int, tuple[int, int]]:
    """Return (arrival instant, last gain instant) of each record of `window` that can earn."""
    return {
        e.seq: (instance.instant_of[e.seq], gains.points[e.seq][-1])
        for e in instance.entries()
        if e.window == window and gains.points.get(e.seq)
    }


def odja_work(instance: ShedInstance, gains: Gains, window: int, share: int, limit: int) -> int:
    """Return an estimate of the states ODJA visits for `window`, or a number > `limit` once over it."""
    spans = _useful(instance, gains, window)
    alive = [0] * (len(instance.instants) + 1)
    for first, last in spans.values():
        alive[first] += 1
        alive[last + 1] -= 1
    work, running = 0, 0
    for step in alive:
        running += step
        work += math.comb(running, min(share, running)) * (running + 1)
        if work > limit:
            break
    return work


def _walk(path: _Path) -> Iterator[tuple[int, frozenset[int]]]:
    while path is not None:
        parent, index, keep = path
        yield index, keep
        path = parent


def odja_window(
    instance: ShedInstance, gains: Gains, window: int, share: int
) -> tuple[float, set[tuple[int, int]]]:
    """Return the best importance `window` can earn holding at most `share` records, and its plan.

    The plan is the set of (seq, instant index) at which the optimal path holds each record.
    """
    spans = _useful(instance, gains, window)
    states: dict[frozenset[int], tuple[float, float, _Path]] = {frozenset(): (0.0, 0.0, None)}
    for index, instant in enumerate(instance.instants):
        new = [e.seq for e in instant.arrivals if e.seq in spans]
        following: dict[frozenset[int], tuple[float, float, _Path]] = {}
        for state, (importance, count, path) in states.items():
            pool = [s for s in state if spans[s][1] >= index] + new
            for keep in combinations(pool, min(share, len(pool))):
                held = frozenset(keep)
                earned = importance + sum(gains.importance.get((s, index), 0.0) for s in keep)
                results = count + sum(gains.count.get((s, index), 0.0) for s in keep)
                best = following.get(held)
                if best is None or (earned, results) >= best[:2]:
                    following[held] = (earned, results, (path, index, held) if keep else path)
        states = following
    importance, _, path = max(states.values(), key=lambda v: (v[0], v[1]))
    plan = {(seq, index) for index, keep in _walk(path) for seq in keep}
    return importance, plan
