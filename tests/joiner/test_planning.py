"""`QueryPlanner`: rates follow what arrived since the last observation (pure, in-memory engines)."""

from __future__ import annotations

import itertools

import pytest

from streamjoin.engine import MultiJoin
from streamjoin.joiner.planning import FULL_INTERVAL_RECORDS, QueryPlanner
from streamjoin.query import parse_query

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [
            {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 50}} for s in "abc"
        ],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": "out"},
    }
)

_offsets = itertools.count()


def _feed(engine: MultiJoin, per_ms: dict[str, int], start: int, ms: int) -> None:
    """Add `per_ms[s]` records of each stream per millisecond of event time, from `start`."""
    for t in range(start, start + ms):
        for stream, n in per_ms.items():
            for _ in range(n):
                engine.add(stream, {"ts": t, "k": t % 7}, ts=t, offset=next(_offsets))
    engine.advance()


def test_rates_follow_the_latest_interval() -> None:
    engine = MultiJoin(QUERY)
    planner = QueryPlanner(QUERY)
    assert planner.observe([engine]) is None  # nothing yet
    _feed(engine, {"a": 1, "b": 1, "c": 10}, 0, 200)
    first = planner.observe([engine])
    assert first is not None
    assert first["c"].rate == pytest.approx(10 * first["a"].rate, rel=0.05)
    _feed(engine, {"a": 10, "b": 1, "c": 1}, 200, 200)  # 2,400 records: a full interval
    second = planner.observe([engine])
    assert second is not None
    assert second["a"].rate == pytest.approx(10, rel=0.05)
    assert second["c"].rate == pytest.approx(1, rel=0.05)  # since the start it would be 5.5


def test_a_stream_that_stops_falls_to_zero_and_a_quiet_interval_only_nudges() -> None:
    engine = MultiJoin(QUERY)
    planner = QueryPlanner(QUERY)
    _feed(engine, {"a": 4, "b": 4, "c": 4}, 0, 100)
    planner.observe([engine])
    _feed(engine, {"a": 4, "b": 4}, 100, 100)  # c stopped; 800 records < a full interval
    stats = planner.observe([engine])
    assert stats is not None
    weight = 800 / FULL_INTERVAL_RECORDS
    assert stats["c"].rate == pytest.approx((1 - weight) * 4, rel=0.05)
    _feed(engine, {"a": 8, "b": 8}, 200, 100)
    stats = planner.observe([engine])
    assert stats is not None
    assert stats["c"].rate == 0
    assert stats["a"].rate == pytest.approx(8, rel=0.05)
