"""Lazy evaluation: the qualitative claims of Golab & Özsu's Fig. 2 and Fig. 3 (notes, check G11)."""

from __future__ import annotations

import itertools

import pytest

from streamjoin.planner.cost import CostModel
from streamjoin.planner.exhaustive import optimal_global, optimal_local
from streamjoin.planner.stats import StreamStats

TAUS = [1, 2, 5, 10, 15, 20, 30, 40, 50]


def _fig3(tau: float, fast_rate: float) -> CostModel:
    stats = {f"S{i}": StreamStats(f"S{i}", 1.0, 100, distinct=50) for i in range(1, 4)}
    stats["S4"] = StreamStats("S4", fast_rate, 100, distinct=50)
    return CostModel.build(stats, tau=tau)


def _three(model: CostModel) -> tuple[float, float, float]:
    """Return the best NAIVE, LAZY and GENERAL costs (each over its own search space)."""
    n = len(model.names)
    naive = min(sum(model.origin_cost(i, g) for i in range(n)) for g in itertools.permutations(range(n)))
    lazy = optimal_global(model)[1]
    general = sum(optimal_local(model, i)[1] for i in range(n))
    return naive, lazy, general


def test_fig3a_lazy_equals_general_and_rises() -> None:
    costs = [_three(_fig3(tau, 1.0)) for tau in TAUS]
    for naive, lazy, general in costs:
        assert lazy == pytest.approx(general)
        assert naive > general
    generals = [g for _, _, g in costs]
    assert generals == sorted(generals) and generals[-1] > generals[0]
    # NAIVE's margin is largest at small tau.
    assert costs[0][0] / costs[0][2] > costs[-1][0] / costs[-1][2]


def test_fig3b_general_wins_and_lazy_falls_behind_at_large_tau() -> None:
    small = _three(_fig3(1, 10.0))
    large = _three(_fig3(50, 10.0))
    for naive, lazy, general in (small, large):
        assert general <= min(naive, lazy) * (1 + 1e-12)
    assert small[1] == pytest.approx(small[2])  # LAZY = GENERAL at small tau
    assert small[0] > 2 * small[2]  # NAIVE the most expensive at small tau
    naive, lazy, general = large
    assert lazy > naive and lazy > general * 1.05  # LAZY beaten by both at large tau
    assert naive < general * 1.02  # NAIVE nearly as good as GENERAL
    model = _fig3(50, 10.0)
    assert optimal_local(model, 3)[0][-1] == 3  # GENERAL processes S4's batch in the inner-most loop


def test_fig3b_reconstructed_values() -> None:
    """The notes' sample values for Fig. 3(b) (alpha = 1): NAIVE / LAZY / GENERAL."""
    assert [round(c) for c in _three(_fig3(1, 10.0))] == [58307, 20450, 20450]
    assert [round(c) for c in _three(_fig3(50, 10.0))] == [57900, 61800, 57600]


@pytest.mark.parametrize("n", range(2, 9))
def test_fig2_multiway_closed_form_and_naive(n: int) -> None:
    stats = {f"S{i}": StreamStats(f"S{i}", 1, 100, distinct=50) for i in range(n)}
    eager = CostModel.build(stats)
    assert eager.global_cost(list(eager.names)) == pytest.approx(n * 100 * (2 ** (n - 1) - 1))
    # NAIVE eager: each record is a batch of one at its own position in the global order. With
    # rate 1 that is the lazy formula at tau = 1 over windows of exactly lambda * T records.
    naive = CostModel(eager.names, eager.rates, eager.sizes, eager.distinct, eager.buckets, tau=1.0)
    g = list(range(n))
    naive_cost = sum(naive.origin_cost(i, g) for i in range(n))
    if n == 2:
        assert naive_cost == eager.global_cost(list(eager.names)) == 200
    else:
        assert naive_cost > 10 * eager.global_cost(list(eager.names))
