"""The exhaustive search returns the model's true optimum (checked against plain enumeration)."""

from __future__ import annotations

import itertools
import random

import pytest

from streamjoin.planner.cost import CostModel
from streamjoin.planner.exhaustive import all_global_costs, optimal_global, optimal_local
from streamjoin.planner.graph import JoinGraph
from streamjoin.planner.stats import StreamStats

from .golab import model_of, random_streams


@pytest.mark.parametrize("seed", range(6))
def test_optimal_global_is_the_minimum(seed: int) -> None:
    rnd = random.Random(seed)
    model = CostModel.build(random_streams(3 + seed % 4, rnd, hashed=seed % 2 == 1))
    order, cost = optimal_global(model)
    every = [model.order_cost(p) for p in itertools.permutations(range(len(model.names)))]
    assert cost == pytest.approx(min(every))
    assert model.order_cost(order) == cost
    # A bound from any order only speeds the search up.
    assert optimal_global(model, upper=max(every))[1] == pytest.approx(cost)
    assert optimal_global(model, upper=min(every) / 2)[1] == pytest.approx(cost)


@pytest.mark.parametrize("tau", [None, 5.0, 60.0])
def test_optimal_local_is_the_minimum_per_origin(tau: float | None) -> None:
    model = model_of(6, tau=tau)
    for origin in range(4):
        order, cost = optimal_local(model, origin)
        perms = [p for p in itertools.permutations(range(4)) if tau is not None or p[0] == origin]
        assert cost == pytest.approx(min(model.origin_cost(origin, p) for p in perms))
        if tau is None:
            assert order[0] == origin


def test_optimal_local_keeps_to_the_join_graph() -> None:
    graph = JoinGraph(
        ("a", "b", "c"), (frozenset({("a", "x"), ("b", "x")}), frozenset({("b", "y"), ("c", "y")}))
    )
    stats = {s: StreamStats(s, 1, 10, distinct=100) for s in "abc"}
    model = CostModel.build(stats, graph, tau=5)
    for origin in range(3):
        order, _ = optimal_local(model, origin)
        assert model.connected(order)


def test_all_global_costs_sorted_and_complete() -> None:
    costs = all_global_costs(model_of(5))
    assert len(costs) == 24 and len({o for o, _ in costs}) == 24
    assert [c for _, c in costs] == sorted(c for _, c in costs)
    assert costs[0][0] == (0, 1, 2, 3)
    assert costs[0][1] == 16000
    assert costs[-1][1] == 86850


def test_exhaustive_refuses_more_than_eight_streams() -> None:
    stats = {f"S{i}": StreamStats(f"S{i}", 1, 10, distinct=5) for i in range(9)}
    with pytest.raises(ValueError, match="limited to 8"):
        optimal_global(CostModel.build(stats))
