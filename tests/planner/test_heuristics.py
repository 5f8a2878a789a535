"""Golab & Özsu's heuristics: the initial order (G6), the augmented one (G7), and the gap to the optimum."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from streamjoin.planner import heuristics as h
from streamjoin.planner.cost import CostModel
from streamjoin.planner.exhaustive import names_of, optimal_global, optimal_local
from streamjoin.planner.stats import StreamStats

from .golab import model_of, random_streams, stats_of


def _names(model: CostModel, order: tuple[int, ...]) -> str:
    return ",".join(names_of(model, order))


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (5, {"S1,S2,S3,S4", "S2,S1,S3,S4"}),
        (6, {"S2,S3,S4,S1"}),  # H1; the paper also lists S2,S3,S1,S4 (H2)
        (7, {"S3,S4,S1,S2", "S4,S3,S1,S2"}),
    ],
)
def test_initial_heuristic_g6(table: int, expected: set[str]) -> None:
    model = model_of(table)
    assert _names(model, h.initial_order(model)) in expected


def test_h2_gives_the_other_table6_order() -> None:
    model = model_of(6)
    assert _names(model, h.match_order(model)) == "S2,S3,S1,S4"
    assert round(model.order_cost(h.match_order(model))) == 123150


@pytest.mark.parametrize(("table", "fast"), [(5, ("S1",)), (6, ("S1",)), (7, ("S1", "S2"))])
def test_fast_streams_are_the_papers(table: int, fast: tuple[str, ...]) -> None:
    model = model_of(table)
    assert names_of(model, h.fast_streams(model)) == fast


def test_fast_streams_factor_and_limit() -> None:
    rates = [1, 1, 3.1, 50, 40, 30]
    stats = {f"S{i}": StreamStats(f"S{i}", r, 100, distinct=10) for i, r in enumerate(rates, 1)}
    model = CostModel.build(stats)
    # medians of the others: S3 -> 30 (not fast); S4, S5, S6 -> 3.1
    assert names_of(model, h.fast_streams(model)) == ("S4", "S5", "S6")
    assert names_of(model, h.fast_streams(model, limit=2)) == ("S4", "S5")
    assert h.fast_streams(model, factor=20) == ()


@pytest.mark.parametrize(
    ("table", "order", "cost"),
    [(5, "S1,S2,S3,S4", 16000), (6, "S2,S1,S3,S4", 80400), (7, "S3,S1,S4,S2", 47976.9)],
)
def test_augmented_heuristic_finds_the_optimum_g7(table: int, order: str, cost: float) -> None:
    """The paper's augmented heuristic alone (H1, fast streams moved) finds each table's optimum."""
    model = model_of(table)
    paper = h.heuristic_global(model, extra_seeds=False, polish=False)
    assert _names(model, paper) == order
    assert round(model.order_cost(paper), 1) == cost
    _, optimum = optimal_global(model)
    assert round(optimum, 1) == cost
    assert model.order_cost(h.heuristic_global(model)) == pytest.approx(optimum)


def test_initial_alone_misses_table6_and_table7_optima() -> None:
    """Without moving the fast streams the initial order is not optimal (why the paper augments)."""
    for table in (6, 7):
        model = model_of(table)
        assert model.order_cost(h.initial_order(model)) > optimal_global(model)[1] * 1.01


def test_placements_keep_the_others_in_order() -> None:
    orders = list(h.placements((0, 1, 2, 3, 4), (3, 4)))
    assert len(orders) == math.perm(5, 2) == len(set(orders))
    for o in orders:
        assert [j for j in o if j not in (3, 4)] == [0, 1, 2]
    fixed = list(h.placements((2, 0, 1, 3), (3,), fixed_prefix=1))
    assert fixed == [(2, 3, 0, 1), (2, 0, 3, 1), (2, 0, 1, 3)]


def test_hybrid_puts_hashed_windows_inside() -> None:
    stats = stats_of(5)
    stats["S1"] = StreamStats("S1", 10, 100, distinct=500, buckets=50)
    stats["S3"] = StreamStats("S3", 1, 200, distinct=40, buckets=8)
    model = CostModel.build(stats)
    assert _names(model, h.hashed_inner(model, (0, 1, 2, 3))) == "S2,S4,S1,S3"


def test_greedy_local_follows_the_join_graph() -> None:
    """Chain a-b-c-d on different attributes: from c, only b or d may follow; the smaller result wins."""
    from streamjoin.planner.graph import JoinGraph

    graph = JoinGraph(
        ("a", "b", "c", "d"),
        (
            frozenset({("a", "x"), ("b", "x")}),
            frozenset({("b", "y"), ("c", "y")}),
            frozenset({("c", "z"), ("d", "z")}),
        ),
    )
    stats = {s: StreamStats(s, 1, 100, distinct=10) for s in "abc"}
    stats["d"] = StreamStats("d", 1, 100, distinct=1000)
    model = CostModel.build(stats, graph)
    order = h.greedy_local(model, 2)
    assert names_of(model, order) == ("c", "d", "b", "a")
    assert model.connected(order)
    assert model.connected(h.heuristic_local(model, 0))


def _gap_study(count: int, seed: int, *, hashed: bool) -> tuple[list[float], list[float]]:
    rnd = random.Random(seed)
    planner_gap, paper_gap = [], []
    for k in range(count):
        model = CostModel.build(random_streams(3 + k % 5, rnd, hashed=hashed))
        ours = model.order_cost(h.heuristic_global(model))
        paper = model.order_cost(h.heuristic_global(model, extra_seeds=False, polish=False))
        _, best = optimal_global(model, upper=ours)
        planner_gap.append(ours / best)
        paper_gap.append(paper / best)
    return planner_gap, paper_gap


@pytest.mark.slow
@pytest.mark.parametrize(("hashed", "count", "bound"), [(False, 200, 1.02), (True, 100, 1.02)])
def test_heuristic_gap_on_random_stream_sets(hashed: bool, count: int, bound: float) -> None:
    """Measured on seed 2003 (docs/planner.md): the planner's heuristic is within `bound` of the optimum.

    Observed here: NLJ, 200 sets: optimal in 200; hashed, 100 sets: optimal in 99, max 1.0016. Over
    1200 more sets (seeds 1-3, both families) the planner found the optimum every time. The paper's
    heuristic alone lands far off on such sets (max 22x and 82x here); it is reported, not bounded.
    """
    ours, paper = _gap_study(count, 2003, hashed=hashed)
    optimal = sum(g <= 1 + 1e-9 for g in ours)
    paper_optimal = sum(g <= 1 + 1e-9 for g in paper)
    print(
        f"\nheuristic/optimum ({'hashed' if hashed else 'nlj'}, n=3..7, {count} sets): planner max "
        f"{max(ours):.4f}, mean {statistics.mean(ours):.4f}, optimal in {optimal}; paper-only max "
        f"{max(paper):.2f}, median {statistics.median(paper):.3f}, optimal in {paper_optimal}"
    )
    assert min(ours) >= 1 - 1e-9
    assert max(ours) <= bound
    assert optimal >= 0.9 * count


@pytest.mark.slow
def test_general_lazy_local_gap_and_superset() -> None:
    """Per-origin heuristic orders land within 2% of the per-origin optimum; GENERAL <= LAZY."""
    rnd = random.Random(11)
    worst = 1.0
    for k in range(30):
        n = 3 + k % 5
        stats = random_streams(n, rnd)
        model = CostModel.build(stats, tau=rnd.choice([1, 10, 50]))
        g = h.heuristic_global(model)
        ours = sum(model.origin_cost(i, h.heuristic_local(model, i, [g])) for i in range(n))
        best = sum(optimal_local(model, i)[1] for i in range(n))
        assert best <= optimal_global(model)[1] * (1 + 1e-9)
        worst = max(worst, ours / best)
    print(f"\nGENERAL lazy heuristic/optimum (30 sets): max {worst:.4f}")
    assert worst <= 1.02
