"""Exhaustive search: the model's true optimum, the reference the heuristics are measured against.

Depth-first over order prefixes with branch and bound: a prefix's cost so far only grows as
windows are added, so a prefix already dearer than the best complete order is cut. Global orders
(eager, LAZY) search n! orders; local orders (GENERAL LAZY, joins on different attributes) are
optimised per origin, since the cost is a sum over origins: n times n! in all.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from streamjoin.planner.budget import UNBOUNDED, SearchBudget
from streamjoin.planner.cost import CostModel, LoopState

__all__ = [
    "MAX_EXHAUSTIVE",
    "all_global_costs",
    "names_of",
    "optimal_global",
    "optimal_local",
    "optimal_locals",
]

MAX_EXHAUSTIVE = 8
_EPS = 1e-9


class _Incumbent:
    """The cheapest complete order found so far, and the bound it sets on every prefix.

    Ties keep the first order found (depth-first in lexicographic order), so the result is stable.
    """

    def __init__(self, upper: float | None) -> None:
        self.order: tuple[int, ...] | None = None
        self.cost = float("inf")
        self.bound = float("inf") if upper is None else upper * (1 + _EPS)

    def prunes(self, total: float) -> bool:
        """Return True if a prefix costing `total` already can't beat the bound."""
        return total > self.bound

    def offer(self, order: tuple[int, ...], total: float) -> None:
        """Keep `order` if it is cheaper than the incumbent (by more than rounding)."""
        if self.order is None or total < self.cost * (1 - _EPS):
            self.order, self.cost = order, total
            self.bound = min(self.bound, total * (1 + _EPS))


def _check_size(model: CostModel, limit: int) -> None:
    if len(model.names) > limit:
        raise ValueError(f"exhaustive search is limited to {limit} streams, got {len(model.names)}")


def optimal_global(
    model: CostModel,
    *,
    upper: float | None = None,
    limit: int = MAX_EXHAUSTIVE,
    budget: SearchBudget = UNBOUNDED,
) -> tuple[tuple[int, ...], float]:
    """Return the cheapest global order (first in lexicographic order among ties) and its cost.

    `upper`, the cost of any known order (e.g. the heuristic's), only speeds the search up.

    Raises:
        BudgetExhausted: `budget` expired before the search finished.
    """
    _check_size(model, limit)
    params = _scalar(model)
    if params is not None:
        return _optimal_global_scalar(model, params, upper, budget)
    n = len(model.names)
    weights = [model.weight(i) for i in range(n)]
    best = _Incumbent(upper)

    def visit(prefix: tuple[int, ...], states: list[LoopState], used: int) -> None:
        budget.check()
        total = sum(w * s.cost for w, s in zip(weights, states, strict=True))
        if best.prunes(total):
            return
        if len(prefix) == n:
            best.offer(prefix, total)
            return
        for j in range(n):
            if not used >> j & 1:
                nxt = [s if i == j else model.extend(s, j, i) for i, s in enumerate(states)]
                visit((*prefix, j), nxt, used | 1 << j)

    visit((), [model.start(i, i) for i in range(n)], 0)
    if best.order is None:  # `upper` was below every order: search again without it
        return optimal_global(model, limit=limit, budget=budget)
    return best.order, model.order_cost(best.order)


def _scalar(model: CostModel) -> tuple[list[float], list[float], list[float]] | None:
    """Return (sizes, buckets, distinct) when one class holds every stream and nothing is observed."""
    if len(model.distinct[0]) != 1 or model.observed:
        return None
    vs = [row[0] for row in model.distinct]
    if any(v is None for v in vs):
        return None
    return list(model.sizes), [b[0] for b in model.buckets], [float(v or 0.0) for v in vs]


def _optimal_global_scalar(
    model: CostModel,
    params: tuple[list[float], list[float], list[float]],
    upper: float | None,
    budget: SearchBudget,
) -> tuple[tuple[int, ...], float]:
    """Search global orders with plain float arithmetic: one common attribute, the hot case."""
    sizes, buckets, vs = params
    n = len(model.names)
    weights = [model.weight(i) for i in range(n)]
    order: list[int] = []
    best = _Incumbent(upper)

    def visit(ns: list[float], cs: list[float], vr: list[float], used: int) -> None:
        budget.check()
        if len(order) == n:
            best.offer(tuple(order), sum(w * c for w, c in zip(weights, cs, strict=True)))
            return
        for j in range(n):
            if used >> j & 1:
                continue
            sj, bj, vj = sizes[j], buckets[j], vs[j]
            ns2, cs2, vr2 = ns[:], cs[:], vr[:]
            total = 0.0
            for i in range(n):
                if i != j:
                    ni, vi = ns[i], vr[i]
                    cs2[i] = cs[i] + ni * sj / bj
                    ns2[i] = ni * sj / (vi if vi > vj else vj)
                    vr2[i] = vi if vi < vj else vj
                total += weights[i] * cs2[i]
            if not best.prunes(total):
                order.append(j)
                visit(ns2, cs2, vr2, used | 1 << j)
                order.pop()

    starts = [model.start(i, i) for i in range(n)]
    visit([s.results for s in starts], [0.0] * n, list(vs), 0)
    if best.order is None:
        return _optimal_global_scalar(model, params, None, budget)
    return best.order, model.order_cost(best.order)


def optimal_local(
    model: CostModel,
    origin: int,
    *,
    connected: bool = True,
    upper: float | None = None,
    limit: int = MAX_EXHAUSTIVE,
    budget: SearchBudget = UNBOUNDED,
) -> tuple[tuple[int, ...], float]:
    """Return the cheapest local order for `origin`'s new records and its cost per time unit.

    Under eager evaluation the origin comes first; under lazy evaluation it may sit anywhere.
    With `connected`, a window is added only once an equality joins it to a placed one (where the
    join graph allows: if nothing remaining is joined, anything may follow). `upper`, the cost of
    any known valid local order, only speeds the search up. Raises `BudgetExhausted` once
    `budget` expires.
    """
    _check_size(model, limit)
    n = len(model.names)
    weight = model.weight(origin)
    best = _Incumbent(upper)

    def visit(prefix: tuple[int, ...], state: LoopState) -> None:
        budget.check()
        total = weight * state.cost
        if best.prunes(total):
            return
        if len(prefix) == n:
            best.offer(prefix, total)
            return
        rest = [j for j in range(n) if not state.placed >> j & 1]
        if connected:
            rest = [j for j in rest if model.linked(state.placed, j)] or rest
        for j in rest:
            visit((*prefix, j), model.extend(state, j, origin))

    firsts = range(n) if model.lazy else [origin]
    for first in firsts:
        visit((first,), model.start(origin, first))
    if best.order is None:  # `upper` was below every order searched: search again without it
        return optimal_local(model, origin, connected=connected, limit=limit, budget=budget)
    return best.order, model.origin_cost(origin, best.order)


def all_global_costs(model: CostModel, *, limit: int = MAX_EXHAUSTIVE) -> list[tuple[tuple[int, ...], float]]:
    """Return every global order with its cost, cheapest first (ties in lexicographic order)."""
    _check_size(model, limit)
    costs = [(p, model.order_cost(p)) for p in itertools.permutations(range(len(model.names)))]
    costs.sort(key=lambda t: t[1])
    return costs


def optimal_locals(model: CostModel, *, connected: bool = True) -> dict[int, tuple[int, ...]]:
    """Return the cheapest local order of every origin."""
    return {i: optimal_local(model, i, connected=connected)[0] for i in range(len(model.names))}


def names_of(model: CostModel, order: Sequence[int]) -> tuple[str, ...]:
    """Return the stream names of the stream numbers `order`."""
    return tuple(model.names[j] for j in order)
