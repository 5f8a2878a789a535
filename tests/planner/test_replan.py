"""Re-planning: a rate moving by the threshold (default 2x) triggers, 1.5x does not; changes are counted."""

from __future__ import annotations

import logging

import pytest

from streamjoin.planner import Planner, Replanner
from streamjoin.planner.stats import StreamStats

from .golab import query_of, stats_of

NAMES = ["S1", "S2", "S3", "S4"]
QUERY = query_of(NAMES, [100.0, 100.0, 200.0, 100.0], algorithm="nlj")


class CountingPlanner(Planner):
    """A planner that counts how often it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def plan(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super().plan(*args, **kwargs)


def _with_rate(stats: dict[str, StreamStats], name: str, rate: float) -> dict[str, StreamStats]:
    out = dict(stats)
    s = out[name]
    out[name] = StreamStats(name, rate, s.window, distinct=s.distinct, buckets=s.buckets)
    return out


def test_first_observe_returns_the_initial_plan() -> None:
    r = Replanner(QUERY)
    assert r.plan is None
    plan = r.observe(stats_of(5))
    assert plan is not None and plan.global_order == ("S1", "S2", "S3", "S4")
    assert r.changes == 0 and r.replans == 0
    assert r.plan is plan


@pytest.mark.parametrize(
    ("factor", "replans"), [(1.5, 0), (1 / 1.5, 0), (1.99, 0), (2.0, 1), (0.5, 1), (3.0, 1)]
)
def test_threshold(factor: float, replans: int) -> None:
    planner = CountingPlanner()
    r = Replanner(QUERY, planner)
    r.observe(stats_of(5))
    r.observe(_with_rate(stats_of(5), "S4", 3 * factor))
    assert r.replans == replans
    assert planner.calls == 1 + replans


def test_rate_change_switches_the_plan_and_is_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    r = Replanner(QUERY)
    first = r.observe(stats_of(5))
    with caplog.at_level(logging.INFO, logger="streamjoin.planner"):
        new = r.observe(_with_rate(stats_of(5), "S2", 200.0))  # S2 turns 200x faster
    assert first is not None and new is not None
    assert new.global_order != first.global_order
    assert r.changes == 1 and r.plan == new
    assert r.history[0].old == first and r.history[0].new == new
    assert "S2 1 -> 200" in new.reason
    assert any("plan change #1" in rec.getMessage() for rec in caplog.records)
    # The reference rates moved with the re-plan: the same statistics again do nothing.
    assert r.observe(_with_rate(stats_of(5), "S2", 200.0)) is None
    assert r.rates["S2"] == 200.0
    # Back to the start: a second change.
    back = r.observe(stats_of(5))
    assert back is not None and back.global_order == first.global_order and r.changes == 2


def test_replan_with_same_result_is_not_a_change() -> None:
    r = Replanner(QUERY)
    r.observe(stats_of(5))
    # Every rate doubles: each origin's cost scales alike, the order stays.
    doubled = stats_of(5)
    for name in NAMES:
        doubled = _with_rate(doubled, name, 2 * doubled[name].rate)
    assert r.observe(doubled) is None
    assert r.replans == 1 and r.changes == 0


def test_request_forces_a_replan() -> None:
    planner = CountingPlanner()
    r = Replanner(QUERY, planner)
    r.observe(stats_of(5))
    assert r.observe(stats_of(5)) is None and planner.calls == 1
    r.request()
    assert r.observe(stats_of(5)) is None  # same plan: nothing to switch to
    assert planner.calls == 2 and r.replans == 1
    assert r.observe(stats_of(5)) is None and planner.calls == 2  # the request was consumed


def test_a_stream_starting_from_zero_is_a_move() -> None:
    r = Replanner(QUERY)
    r.observe(_with_rate(stats_of(5), "S1", 0.0))
    r.observe(stats_of(5))
    assert r.replans == 1


def test_min_gain_keeps_a_plan_that_is_almost_as_good() -> None:
    strict = Replanner(QUERY, min_gain=0.99)
    strict.observe(stats_of(5))
    assert strict.observe(_with_rate(stats_of(5), "S2", 200.0)) is None
    assert strict.changes == 0 and strict.replans == 1


def test_threshold_validation() -> None:
    with pytest.raises(ValueError):
        Replanner(QUERY, threshold=1.0)
    with pytest.raises(ValueError):
        Replanner(QUERY, min_gain=1.0)
