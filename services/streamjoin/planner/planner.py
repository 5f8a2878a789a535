"""The planner facade: a query and its statistics in, the `JoinPlan` the engine runs out.

- A fixed `query.order` is respected: each origin first (Golab's Table 4), then the order, a stream
  added once an equality connects it where the join graph allows.
- `order: "auto"` with eager evaluation and one common join attribute: the augmented heuristic's
  global order (or the exhaustive optimum), local orders derived from it.
- Lazy evaluation (GENERAL LAZY) or joins on different attributes: a global order as above, and
  each origin's local order optimised on its own (the cost is a sum over origins).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from streamjoin.engine.plan import JoinPlan
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
    """

    search: Search = "heuristic"
    fast_factor: float = 3.0
    max_fast: int = 3
    extra_seeds: bool = True
    polish: bool = True

    def __post_init__(self) -> None:
        if self.fast_factor < 1:
            raise ValueError("fast_factor must be >= 1")
        if self.max_fast < 0:
            raise ValueError("max_fast must be >= 0")


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
        """Return the plan the options choose for a compiled model."""
        opts = self.options
        exhaustive = opts.search == "exhaustive" and len(model.names) <= MAX_EXHAUSTIVE
        g = heuristic_global(
            model,
            fast_factor=opts.fast_factor,
            max_fast=opts.max_fast,
            extra_seeds=opts.extra_seeds,
            polish=opts.polish,
        )
        if exhaustive and model.single_attribute:
            g = optimal_global(model, upper=model.order_cost(g))[0]
        names = model.names
        mode = "lazy" if model.lazy else "eager"
        how = "exhaustive" if exhaustive else "heuristic"
        if not model.lazy and model.single_attribute:
            cost = model.order_cost(g)
            plan = JoinPlan.from_global(_names(model, g), cost)
            return _with_reason(plan, f"{how}, {mode}, global order")
        local: dict[str, tuple[str, ...]] = {}
        for i in range(len(names)):
            o = heuristic_local(
                model, i, [g], fast_factor=opts.fast_factor, max_fast=opts.max_fast, polish=opts.polish
            )
            if exhaustive:
                o = optimal_local(model, i, upper=model.origin_cost(i, o))[0]
            local[names[i]] = _names(model, o)
        plan = JoinPlan(_names(model, g), local)
        return _with_reason(
            JoinPlan(plan.global_order, plan.local_orders, model.plan_cost(plan)),
            f"{how}, {mode}, per-origin local orders",
        )


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
