"""The planner facade: fixed orders, eager global orders, GENERAL LAZY and join-graph local orders."""

from __future__ import annotations

import pytest

from streamjoin.engine.plan import JoinPlan
from streamjoin.planner import Planner, PlannerOptions
from streamjoin.planner.stats import StreamStats
from streamjoin.query import parse_query

from .golab import query_of, stats_of

NAMES = ["S1", "S2", "S3", "S4"]
WINDOWS = [100.0, 100.0, 200.0, 100.0]


def test_auto_eager_uses_the_global_order_of_table4() -> None:
    plan = Planner().plan(query_of(NAMES, WINDOWS, algorithm="nlj"), stats_of(5))
    assert plan.global_order == ("S1", "S2", "S3", "S4")
    assert plan == JoinPlan.from_global(plan.global_order, 16000.0)
    plan.validate(NAMES)


@pytest.mark.parametrize(("table", "order"), [(6, ("S2", "S1", "S3", "S4")), (7, ("S3", "S1", "S4", "S2"))])
def test_auto_eager_finds_table_optima(table: int, order: tuple[str, ...]) -> None:
    plan = Planner().plan(query_of(NAMES, algorithm="nlj"), stats_of(table))
    assert plan.global_order == order


def test_fixed_order_is_respected() -> None:
    query = query_of(NAMES, WINDOWS, algorithm="nlj", order=["S4", "S3", "S2", "S1"])
    plan = Planner().plan(query, stats_of(5))
    assert plan.global_order == ("S4", "S3", "S2", "S1")
    assert plan.local_orders["S2"] == ("S2", "S4", "S3", "S1")
    assert plan.estimated_cost == 86850
    assert plan.reason == "fixed order"


def test_algorithm_changes_the_model() -> None:
    nlj = Planner().plan(query_of(NAMES, WINDOWS, algorithm="nlj"), stats_of(5))
    hashed = Planner().plan(query_of(NAMES, WINDOWS, algorithm="hash"), stats_of(5, buckets=5))
    assert nlj.estimated_cost is not None
    assert hashed.estimated_cost == pytest.approx(nlj.estimated_cost / 5)
    exact = {k: StreamStats(k, v.rate, v.window, distinct=v.distinct) for k, v in stats_of(5).items()}
    keyed = Planner().plan(query_of(NAMES, WINDOWS, algorithm="hash"), exact)
    assert keyed.estimated_cost is not None and keyed.estimated_cost < 1000  # one bucket per key


def test_lazy_large_tau_plans_per_origin() -> None:
    """Fig. 3(b) at tau = 50: S4's batch goes inner-most, and the plan beats LAZY's."""
    stats = {f"S{i}": StreamStats(f"S{i}", 1.0, 100, distinct=50) for i in range(1, 4)}
    stats["S4"] = StreamStats("S4", 10.0, 100, distinct=50)
    query = query_of(NAMES, algorithm="nlj", evaluation={"mode": "lazy", "every": 50})
    plan = Planner().plan(query, stats)
    assert plan.local_orders["S4"][-1] == "S4"
    assert plan.estimated_cost == pytest.approx(57600)
    small = Planner().plan(query_of(NAMES, algorithm="nlj", evaluation={"mode": "lazy", "every": 1}), stats)
    assert all(order[0] == origin for origin, order in small.local_orders.items())
    plan.validate(NAMES)


def test_exhaustive_search_option_matches_heuristic_on_tables() -> None:
    query = query_of(NAMES, WINDOWS, algorithm="nlj")
    for table in (5, 6, 7):
        a = Planner().plan(query, stats_of(table))
        b = Planner(PlannerOptions(search="exhaustive")).plan(query, stats_of(table))
        assert a.estimated_cost == pytest.approx(b.estimated_cost)
        assert b.reason.startswith("exhaustive")


def test_different_attributes_local_orders_follow_the_graph() -> None:
    """a.x = b.x, b.y = c.y, c.z = d.z: every local order adds a stream only once it is joined."""
    query = parse_query(
        {
            "name": "chain",
            "inputs": [{"stream": s, "window": {"range": 100}} for s in "abcd"],
            "where": [["a.x", "=", "b.x"], ["b.y", "=", "c.y"], ["c.z", "=", "d.z"]],
            "output": {"topic": "o"},
        }
    )
    params = [("a", 50, 5), ("b", 1, 100), ("c", 2, 10), ("d", 1, 1000)]
    stats = {s: StreamStats(s, r, 100, distinct=v) for s, r, v in params}
    plan = Planner().plan(query, stats)
    plan.validate(list("abcd"))
    neighbours = {"a": {"b"}, "b": {"a", "c"}, "c": {"b", "d"}, "d": {"c"}}
    for origin, order in plan.local_orders.items():
        assert order[0] == origin
        for k in range(1, 4):
            assert neighbours[order[k]] & set(order[:k]), (origin, order)
    assert plan.local_orders["b"] in {("b", "c", "d", "a"), ("b", "c", "a", "d"), ("b", "a", "c", "d")}
    best = Planner(PlannerOptions(search="exhaustive")).plan(query, stats)
    assert plan.estimated_cost == pytest.approx(best.estimated_cost)


def test_observed_selectivity_overrides_distinct_counts() -> None:
    query = query_of(["a", "b", "c"], algorithm="nlj")
    stats = {s: StreamStats(s, 1, 100, distinct=10) for s in "abc"}
    base = Planner().model(query, stats)
    edge = query.join_edges[0]  # a.k = b.k
    seen = Planner().model(query, stats, {edge: 0.5})
    # Origin a, then b: results 100 * 0.5 = 50 instead of 100 / 10 = 10, so scanning c costs more.
    assert seen.origin_cost(0, [0, 1, 2]) == 100 + 50 * 100
    assert base.origin_cost(0, [0, 1, 2]) == 100 + 10 * 100


def test_missing_statistics_are_an_error() -> None:
    with pytest.raises(ValueError, match="no statistics"):
        Planner().plan(query_of(NAMES), {k: v for k, v in stats_of(5).items() if k != "S3"})


def test_join_graph_classes_from_a_query() -> None:
    from streamjoin.planner.graph import JoinGraph

    chain = JoinGraph.from_query(query_of(["a", "b", "c"]))
    assert chain.classes == (frozenset({("a", "k"), ("b", "k"), ("c", "k")}),)
    mixed = parse_query(
        {
            "name": "m",
            "inputs": [{"stream": s, "window": {"range": 10}} for s in "abc"],
            "where": [["a.x", "=", "b.x"], ["b.y", "=", "c.y"], ["a.v", ">", "c.v"]],
            "output": {"topic": "o"},
        }
    )
    graph = JoinGraph.from_query(mixed)
    assert set(graph.classes) == {frozenset({("a", "x"), ("b", "x")}), frozenset({("b", "y"), ("c", "y")})}
    assert graph.fields("b", graph.classes.index(frozenset({("b", "y"), ("c", "y")}))) == ("y",)
