"""The cost model reproduces every number of cost-model.md's table (Golab & Özsu §5.1)."""

from __future__ import annotations

import itertools
import statistics

import pytest

from streamjoin.planner.cost import CostModel
from streamjoin.planner.graph import JoinGraph
from streamjoin.planner.stats import StreamStats

from .golab import model_of, stats_of

# (table, plan, cost) exactly as cost-model.md lists them.
SPEC_TABLE = [
    (5, "S1,S2,S3,S4", 16000),
    (5, "S2,S1,S3,S4", 19600),
    (6, "S2,S1,S3,S4", 80400),
    (6, "S2,S3,S1,S4", 123150),
    (6, "S2,S3,S4,S1", 248450),
    (6, "S1,S2,S3,S4", 120000),
    (7, "S3,S4,S1,S2", 49542.3),
    (7, "S3,S1,S4,S2", 47976.9),
    (7, "S3,S1,S2,S4", 51953.8),
    (7, "S1,S2,S3,S4", 68200),
    (7, "S2,S1,S3,S4", 79000),
]


def _all_costs(model: CostModel) -> dict[tuple[str, ...], float]:
    return {p: model.global_cost(p) for p in itertools.permutations(model.names)}


@pytest.mark.parametrize(("table", "plan", "cost"), SPEC_TABLE)
def test_spec_table_cost(table: int, plan: str, cost: float) -> None:
    assert round(model_of(table).global_cost(plan.split(",")), 1) == cost


def test_table5_worst_plan_and_ranks() -> None:
    costs = _all_costs(model_of(5))
    ranked = sorted(costs, key=lambda p: costs[p])
    assert max(costs.values()) == 86850
    assert ranked[0] == ("S1", "S2", "S3", "S4")
    assert ranked.index(("S2", "S1", "S3", "S4")) == 4  # "fifth best"
    assert max(costs.values()) / min(costs.values()) == pytest.approx(5.43, abs=0.01)


def test_table6_optimum_and_worst() -> None:
    costs = _all_costs(model_of(6))
    assert min(costs, key=lambda p: costs[p]) == ("S2", "S1", "S3", "S4")
    assert max(costs.values()) == 646050


def test_table7_average_and_optimum() -> None:
    costs = _all_costs(model_of(7))
    assert round(statistics.mean(costs.values()), 1) == 63361.5
    assert round(min(costs.values()), 1) == 47976.9
    best = [p for p, c in costs.items() if c == min(costs.values())]
    assert set(best) == {("S3", "S1", "S4", "S2"), ("S4", "S1", "S3", "S2")}


@pytest.mark.parametrize("table", [5, 6, 7])
def test_five_buckets_divide_every_cost_by_five(table: int) -> None:
    plain, hashed = _all_costs(model_of(table)), _all_costs(model_of(table, buckets=5))
    for plan, cost in plain.items():
        assert hashed[plan] == pytest.approx(cost / 5, rel=1e-12)
    assert sorted(plain, key=plain.__getitem__) == sorted(hashed, key=hashed.__getitem__)


def test_table5_hash_b5_best_and_worst() -> None:
    costs = _all_costs(model_of(5, buckets=5))
    assert min(costs.values()) == pytest.approx(3200)
    assert max(costs.values()) == pytest.approx(17370)


def test_worked_example_per_origin() -> None:
    """Table 5, S1,S2,S3,S4: origins cost 3800, 3800, 2400 and 6000 per time unit."""
    model = model_of(5)
    names = ["S1", "S2", "S3", "S4"]
    per_origin = [model.origin_cost(i, [i, *(j for j in range(4) if j != i)]) for i in range(4)]
    assert per_origin == [3800, 3800, 2400, 6000]
    assert sum(per_origin) == model.global_cost(names)


@pytest.mark.parametrize(("table", "rate"), [(5, 210), (6, 1500), (7, 4400 / 13)])
def test_expected_output_rate(table: int, rate: float) -> None:
    assert model_of(table).output_rate() == pytest.approx(rate)


def test_rows_window_uses_its_record_count() -> None:
    """A rows window of 1000 records costs like a range window holding 1000 records."""
    ranged = stats_of(5)
    rows = dict(ranged)
    rows["S1"] = StreamStats("S1", 10, rows=1000, distinct=500)
    a, b = CostModel.build(ranged), CostModel.build(rows)
    assert b.global_cost(["S1", "S2", "S3", "S4"]) == a.global_cost(["S1", "S2", "S3", "S4"]) == 16000
    rows["S1"] = StreamStats("S1", 10, rows=500, distinct=500)  # half the records: cheaper
    assert CostModel.build(rows).global_cost(["S1", "S2", "S3", "S4"]) < 16000


def test_unequal_buckets_discount_each_scan() -> None:
    """A probe of S_j scans W_j / b_j records: a bucket of S4 only is the S4 scans divided by b."""
    stats = stats_of(5)
    stats["S4"] = StreamStats("S4", 3, 100, distinct=5, buckets=4)
    model = CostModel.build(stats)
    # Origin S1 in S1,S2,S3,S4 scans 100 + 0.2*200 + 0.8*300/4 = 200 per record.
    assert model.origin_cost(0, [0, 1, 2, 3]) == pytest.approx(10 * 200)


def test_algorithm_decides_default_buckets() -> None:
    stats = {s.name: StreamStats(s.name, s.rate, s.window, distinct=s.distinct) for s in stats_of(5).values()}
    nlj = CostModel.build(stats, algorithm="nlj")
    hashed = CostModel.build(stats, algorithm="hash")
    assert nlj.global_cost(["S1", "S2", "S3", "S4"]) == 16000
    assert hashed.buckets == ((500.0,), (50.0,), (40.0,), (5.0,))
    # With one bucket per key, origin S1 scans 100/50 + 0.2*200/40 + 0.8*300/5 = 51 per record.
    assert hashed.origin_cost(0, [0, 1, 2, 3]) == pytest.approx(10 * 51)


def test_lazy_with_tiny_tau_tends_to_eager() -> None:
    eager = model_of(5)
    lazy = model_of(5, tau=1e-6)
    for plan in itertools.permutations(eager.names):
        assert lazy.global_cost(plan) == pytest.approx(eager.global_cost(plan), rel=1e-6)


def test_lazy_windows_hold_rate_times_t_plus_tau() -> None:
    model = model_of(5, tau=10)
    assert model.sizes == (1100.0, 110.0, 210.0, 330.0)
    # Origin S4's batch (30 records) first, then S1, S2, S3, all with physical sizes, per 10 units.
    n, scan = 30.0, 0.0
    v = 5.0
    for size, vj in [(1100, 500), (110, 50), (210, 40)]:
        scan += n * size
        n, v = n * size / max(v, vj), min(v, vj)
    assert model.origin_cost(3, [3, 0, 1, 2]) == pytest.approx(scan / 10)


def test_eager_local_order_must_start_with_origin() -> None:
    with pytest.raises(ValueError, match="outer loop"):
        model_of(5).origin_cost(0, [1, 0, 2, 3])


def test_different_attributes_track_each_class() -> None:
    """a.x = b.x, b.y = c.y: c's selectivity uses y's distinct counts only."""
    x_class = frozenset({("a", "x"), ("b", "x")})
    graph = JoinGraph(("a", "b", "c"), (x_class, frozenset({("b", "y"), ("c", "y")})))
    stats = {
        "a": StreamStats("a", 1, 100, distinct=10),
        "b": StreamStats("b", 1, 100, distinct=1, distinct_fields={"x": 20, "y": 50}),
        "c": StreamStats("c", 1, 100, distinct=25),
    }
    model = CostModel.build(stats, graph)
    assert not model.single_attribute
    # origin a: scan b (100), 100/20 = 5 partials; scan c: 5*100, results 5*100/50 = 10.
    assert model.origin_cost(0, [0, 1, 2]) == 600
    # origin a, then c first: a cross product (no shared class), the whole of c per partial.
    assert model.origin_cost(0, [0, 2, 1]) == 100 + 100 * 100
    assert not model.connected([0, 2, 1]) and model.connected([0, 1, 2])
