"""The planner's time bound and its fallback for many inputs: the reason says which search ran."""

from __future__ import annotations

import random
import time

import pytest

from streamjoin.planner import Planner, PlannerOptions
from streamjoin.planner.budget import BudgetExhausted, SearchBudget
from streamjoin.planner.exhaustive import optimal_global

from .golab import model_of, query_of, random_streams


def _names(n: int) -> list[str]:
    return [f"S{i}" for i in range(1, n + 1)]


def test_a_24_input_query_is_planned_within_the_bound_by_the_reduced_heuristic() -> None:
    names = _names(24)
    query = query_of(names, algorithm="nlj")
    stats = random_streams(24, random.Random(1))
    started = time.monotonic()
    plan = Planner(PlannerOptions(time_limit_ms=1_000)).plan(query, stats)
    took = time.monotonic() - started
    assert took < 1.5, f"planning took {took:.2f} s with a 1 s bound"
    assert plan.reason is not None and plan.reason.startswith("heuristic (24 inputs: one fast stream moved")
    plan.validate(names)
    assert sorted(plan.global_order) == sorted(names)


def test_the_reason_says_when_the_bound_cut_the_search() -> None:
    query = query_of(_names(12), algorithm="nlj")
    plan = Planner(PlannerOptions(time_limit_ms=0)).plan(query, random_streams(12, random.Random(2)))
    assert plan.reason is not None and "time bound 0 ms reached" in plan.reason
    plan.validate(_names(12))


def test_small_queries_keep_the_full_heuristic_and_the_exhaustive_search() -> None:
    query = query_of(_names(4), algorithm="nlj")
    stats = random_streams(4, random.Random(3))
    assert Planner().plan(query, stats).reason == "heuristic, eager, global order"
    exhaustive = Planner(PlannerOptions(search="exhaustive")).plan(query, stats)
    assert exhaustive.reason == "exhaustive, eager, global order"


def test_an_exhaustive_search_cut_by_the_bound_falls_back_to_the_heuristic() -> None:
    names = _names(8)
    query = query_of(names, algorithm="nlj")
    stats = random_streams(8, random.Random(4))
    heuristic = Planner().plan(query, stats)
    cut = Planner(PlannerOptions(search="exhaustive", time_limit_ms=0)).plan(query, stats)
    assert cut.reason is not None and cut.reason.startswith("heuristic (time bound 0 ms reached")
    assert cut.estimated_cost is not None and heuristic.estimated_cost is not None
    with pytest.raises(BudgetExhausted):
        optimal_global(model_of(5), budget=SearchBudget(0))


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="time_limit_ms"):
        PlannerOptions(time_limit_ms=-1)
    with pytest.raises(ValueError, match="full_search_inputs"):
        PlannerOptions(full_search_inputs=1)
    with pytest.raises(ValueError, match="limit_ms"):
        SearchBudget(-5)
