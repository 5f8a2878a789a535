"""The planner facade: a query and its statistics in, the `JoinPlan` the engine runs out.

- A fixed `query.order` is respected: each origin first (Golab's Table 4), then the order, a stream
  added once an equality connects it where the join graph allows.
- `order: "auto"` with eager evaluation and one common join attribute: the augmented heuristic's
  global order (or the exhaustive optimum), local orders derived from it.
- Lazy evaluation (GENERAL LAZY) or joins on different attributes: a global order as above, and
  each origin's local order optimised on its own (the cost is a sum over origins).

Every search is bounded (`PlannerOptions.time_limit_ms`, 2 s by default): the exhaustive search
runs only up to `MAX_EXHAUSTIVE` inputs and stops at the bound, keeping the heuristic's order; the
heuristic keeps the best order found when the bound is reached; above `full_search_inputs` inputs
(10) it tries one fast stream's placements instead of three (n instead of n^3 candidates per seed).
The plan's reason says which search ran and whether the bound cut it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from streamjoin.engine.plan import JoinPlan
from streamjoin.planner.budget import BudgetExhausted, SearchBudget
from streamjoin.planner.cost import CostModel
from streamjoin.planner.exhaustive import MAX_EXHAUSTIVE, optimal_global, optimal_local
from streamjoin.planner.graph import JoinGraph
from streamjoin.planner.heuristics import heuristic_global, heuristic_local, link_order
from streamjoin.planner.stats import StreamStats
from streamjoin.query.model import Predicate, QueryDef

__all__ = ["Planner", "PlannerOptions", "Search", "fixed_plan"]

Search: TypeAlias = Literal["heuristic", "exhaustive"]


@dataclass(frozen=True, slots=True)
class PlannerOptions:
    """How the planner searches.

    Args:
        search: `heuristic` (Golab's augmented heuristic) or `exhaustive` (the model's optimum;
            falls back to the heuristic above `MAX_EXHAUSTIVE` streams).
        fast_factor: a stream is fast when its rate exceeds this times the others' median rate.
        max_fast: at most this many fast streams are moved (n^f candidates).
        extra_seeds: also start from H2 and the hybrid hashed-inner order.
        polish: improve the best candidate by moving single windows.
        time_limit_ms: wall-clock bound of one planning run (None: unbounded); when reached, the
            best order found so far is used (the heuristic's, if the exhaustive search was cut).
        full_search_inputs: above this many inputs, at most one fast stream is moved.
    """

    search: Search = "heuristic"
    fast_factor: float = 3.0
    max_fast: int = 3
    extra_seeds: bool = True
    polish: bool = True
    time_limit_ms: int | None = 2_000
    full_search_inputs: int = 10

    def __post_init__(self) -> None:
        if self.fast_factor < 1:
            raise ValueError("fast_factor must be >= 1")
        if self.max_fast < 0:
            raise ValueError("max_fast must be >= 0")
        if self.time_limit_ms is not None and self.time_limit_ms < 0:
            raise ValueError("time_limit_ms must be >= 0 (or None)")
        if self.full_search_inputs < 2:
            raise ValueError("full_search_inputs must be >= 2")


class Planner:
    """Choose join orders from observed statistics with Golab & Özsu's cost model."""

    def __init__(self, options: PlannerOptions | None = None) -> None:
        self.options = options or PlannerOptions()

    def model(
        self,
        query: QueryDef,
        stats: Mapping[str, StreamStats],
        selectivity: Mapping[Predicate, float] | None = None,
    ) -> CostModel:
        """Return the cost model of `query` under `stats` (its evaluation, expiration, algorithm)."""
        lazy_tau = query.evaluation.every if query.evaluation.mode == "lazy" else None
        expire = query.expiration.every if query.expiration.mode == "lazy" else None
        return CostModel.build(
            stats,
            JoinGraph.from_query(query),
            tau=lazy_tau,
            expiration_every=expire,
            algorithm=query.algorithm,
            selectivity=selectivity,
        )

    def plan(
        self,
        query: QueryDef,
        stats: Mapping[str, StreamStats],
        *,
        selectivity: Mapping[Predicate, float] | None = None,
    ) -> JoinPlan:
        """Return the plan for `query` given per-stream `stats` (and observed edge selectivities)."""
        model = self.model(query, stats, selectivity)
        if query.order != "auto":
            return fixed_plan(model, query.order)
        return self.plan_model(model)

    def plan_model(self, model: CostModel) -> JoinPlan:
        """Return the plan the options choose for a compiled model (within the time bound)."""
        opts = self.options
        budget = SearchBudget(opts.time_limit_ms)
        n = len(model.names)
        exhaustive = opts.search == "exhaustive" and n <= MAX_EXHAUSTIVE
        reduced = n > opts.full_search_inputs
        max_fast = min(opts.max_fast, 1) if reduced else opts.max_fast
        g = heuristic_global(
            model,
            fast_factor=opts.fast_factor,
            max_fast=max_fast,
            extra_seeds=opts.extra_seeds,
            polish=opts.polish,
            budget=budget,
        )
        cut = False
        if exhaustive and model.single_attribute:
            try:
                g = optimal_global(model, upper=model.order_cost(g), budget=budget)[0]
            except BudgetExhausted:
                cut = True
        names = model.names
        mode = "lazy" if model.lazy else "eager"
        if not model.lazy and model.single_attribute:
            cost = model.order_cost(g)
            plan = JoinPlan.from_global(_names(model, g), cost)
            how = _search_used(exhaustive and not cut, reduced, n, budget)
            return _with_reason(plan, f"{how}, {mode}, global order")
        local: dict[str, tuple[str, ...]] = {}
        for i in range(len(names)):
            o = heuristic_local(
                model,
                i,
                [g],
                fast_factor=opts.fast_factor,
                max_fast=max_fast,
                polish=opts.polish,
                budget=budget,
            )
            if exhaustive and not cut:
                try:
                    o = optimal_local(model, i, upper=model.origin_cost(i, o), budget=budget)[0]
                except BudgetExhausted:
                    cut = True
            local[names[i]] = _names(model, o)
        plan = JoinPlan(_names(model, g), local)
        how = _search_used(exhaustive and not cut, reduced, n, budget)
        return _with_reason(
            JoinPlan(plan.global_order, plan.local_orders, model.plan_cost(plan)),
            f"{how}, {mode}, per-origin local orders",
        )


def _search_used(exhaustive: bool, reduced: bool, inputs: int, budget: SearchBudget) -> str:
    """Return how the plan was found, for its reason: the search and what bounded it."""
    if exhaustive:
        return "exhaustive"
    notes = []
    if reduced:
        notes.append(f"{inputs} inputs: one fast stream moved")
    if budget.reached:
        notes.append(f"time bound {budget.limit_ms} ms reached: best order so far")
    return "heuristic" + (f" ({'; '.join(notes)})" if notes else "")


def fixed_plan(model: CostModel, order: Sequence[str]) -> JoinPlan:
    """Return the plan for a user-given global order: origin first, then `order`, kept connected."""
    if sorted(order) != sorted(model.names):
        raise ValueError(f"order {list(order)} is not a permutation of {list(model.names)}")
    idx = [model.index(s) for s in order]
    local = {model.names[i]: _names(model, link_order(model, idx, (i,))) for i in range(len(model.names))}
    plan = JoinPlan(tuple(order), local)
    return _with_reason(JoinPlan(plan.global_order, local, model.plan_cost(plan)), "fixed order")


def _names(model: CostModel, order: Sequence[int]) -> tuple[str, ...]:
    return tuple(model.names[j] for j in order)


def _with_reason(plan: JoinPlan, reason: str) -> JoinPlan:
    return JoinPlan(plan.global_order, plan.local_orders, plan.estimated_cost, reason)
