"""`QueryPlanner` over the operators `OperatorFactory` builds: rates follow what arrived lately,
distinct keys are observed whatever the algorithm, and a worker's partitions are summed (pure)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from streamjoin.operator import JoinOperator, OperatorFactory, QueryPlanner
from streamjoin.query import QueryDef, parse_query


def _query(**fields: Any) -> QueryDef:
    raw: dict[str, Any] = {
        "name": "q",
        "inputs": [
            {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 50}} for s in "abc"
        ],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": "out"},
    }
    raw.update(fields)
    return parse_query(raw)


QUERY = _query()
_offsets = itertools.count()


def _feed(op: JoinOperator, per_ms: dict[str, int], start: int, ms: int, keys: int = 7) -> None:
    """Add `per_ms[s]` records of each stream per millisecond of event time, from `start`."""
    for t in range(start, start + ms):
        for stream, n in per_ms.items():
            for j in range(n):
                op.add(stream, {"ts": t, "k": (t + j) % keys}, ts=t, offset=next(_offsets))
    op.advance()


def _stats(planner: QueryPlanner, *ops: JoinOperator) -> Any:
    return planner.observe(op.collector for op in ops if op.collector is not None)


def test_rates_follow_the_latest_interval() -> None:
    factory = OperatorFactory(QUERY, replan_every=None)
    op, planner = factory.build(), factory.planner
    assert _stats(planner, op) is None  # nothing yet
    _feed(op, {"a": 1, "b": 1, "c": 10}, 0, 200)
    first = _stats(planner, op)
    assert first is not None
    assert first["c"].rate == pytest.approx(10 * first["a"].rate, rel=0.05)
    _feed(op, {"a": 10, "b": 1, "c": 1}, 200, 200)
    second = _stats(planner, op)
    assert second is not None
    assert second["a"].rate == pytest.approx(10, rel=0.05)
    assert second["c"].rate == pytest.approx(1, rel=0.05)  # since the start it would be 5.5


def test_a_stream_that_stops_falls_to_zero() -> None:
    factory = OperatorFactory(QUERY, replan_every=None)
    op, planner = factory.build(), factory.planner
    _feed(op, {"a": 4, "b": 4, "c": 4}, 0, 100)
    _feed(op, {"a": 4, "b": 4}, 100, 100)  # c stopped: its rate decays with the event time that passes
    stats = _stats(planner, op)
    assert stats is not None
    assert 0 < stats["c"].rate < 0.1 * stats["a"].rate
    _feed(op, {"a": 8, "b": 8}, 200, 100)
    stats = _stats(planner, op)
    assert stats is not None
    assert stats["c"].rate == pytest.approx(0, abs=0.05)
    assert stats["a"].rate == pytest.approx(8, rel=0.05)


@pytest.mark.parametrize("algorithm", ["hash", "nlj"])
def test_distinct_keys_are_observed_whatever_the_algorithm(algorithm: str) -> None:
    query = _query(algorithm=algorithm)
    factory = OperatorFactory(query, replan_every=None)
    op = factory.build()
    _feed(op, {"a": 1, "b": 2, "c": 3}, 0, 200, keys=30)
    stats = _stats(factory.planner, op)
    assert stats is not None
    assert {s: round(st.distinct) for s, st in stats.items()} == {"a": 30, "b": 30, "c": 30}


def test_an_nlj_query_replans_as_its_rates_move() -> None:
    query = _query(algorithm="nlj")
    factory = OperatorFactory(query, replan_every=None)
    op, planner = factory.build(), factory.planner
    _feed(op, {"a": 1, "b": 1, "c": 10}, 0, 200, keys=40)
    first = planner.maybe_replan([op.collector] if op.collector else [])
    assert first is not None
    op.set_plan(first)
    _feed(op, {"a": 10, "b": 1, "c": 1}, 200, 200, keys=40)
    second = planner.maybe_replan([op.collector] if op.collector else [])
    assert second is not None, "the rates moved 10x: an nlj query must re-plan"
    assert second.global_order != first.global_order
    assert planner.statistics()["a"]["distinct"] == pytest.approx(40, rel=0.05)


def test_partitions_add_up_and_keys_seen_twice_count_once() -> None:
    factory = OperatorFactory(QUERY, replan_every=None)
    p0, p1 = factory.build(0), factory.build(1)
    for t in range(200):
        p0.add("a", {"ts": t, "k": t % 10}, ts=t, partition=0, offset=next(_offsets))
        p1.add("a", {"ts": t, "k": 10 + t % 10}, ts=t, partition=1, offset=next(_offsets))
        p0.add("b", {"ts": t, "k": t % 5}, ts=t, partition=0, offset=next(_offsets))
        p1.add("b", {"ts": t, "k": t % 5}, ts=t, partition=1, offset=next(_offsets))
    one = _stats(factory.planner, p0)
    both = _stats(factory.planner, p0, p1)
    assert one is not None and both is not None
    assert both["a"].rate == pytest.approx(2 * one["a"].rate, rel=0.01)
    assert round(one["a"].distinct) == 10 and round(both["a"].distinct) == 20  # disjoint keys
    assert round(both["b"].distinct) == 5  # the same keys on both partitions
    assert both["c"].rate == 0 and both["c"].distinct == 1


def test_operators_built_after_a_replan_start_with_its_plan() -> None:
    factory = OperatorFactory(QUERY)  # replay and the back-fill: operators re-plan themselves
    op = factory.build()
    _feed(op, {"a": 1, "b": 1, "c": 10}, 0, 300)  # 3,600 records: `advance` re-planned on its own
    plan = factory.planner.plan
    assert plan.estimated_cost is not None  # chosen from statistics, not the default
    assert op.plan == plan and op.engine.plan_changes >= 1
    assert factory.build().plan == plan
    written = OperatorFactory(_query(order=["c", "b", "a"])).build()
    assert written.collector is None  # a written order is never re-planned: nothing is observed
    assert written.replan_if_due() is None
