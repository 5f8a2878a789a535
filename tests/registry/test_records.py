"""The typed records that cross process boundaries: one JSON form each, read back as the same record."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from streamjoin.engine.stats import WindowStats as WindowCounters
from streamjoin.query import ModeDef, QueryError, parse_query
from streamjoin.query.dump import dump_query
from streamjoin.query.grammar import INPUT_FORMATS, InputFormat
from streamjoin.registry import (
    CONTROL_ATTRIBUTES,
    OperatorStats,
    QueryControls,
    QueryRecord,
    StreamRecord,
    WindowStats,
)
from streamjoin.registry.stats import PartitionStats, stat_fields

QUERY: dict[str, Any] = {
    "name": "q",
    "inputs": [
        {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 100}},
        {"stream": "b", "topic": "t.b", "timestamp": None, "window": {"rows": 5, "partition_by": "k"}},
    ],
    "where": [["a.k", "=", "b.k"]],
    "output": {"topic": "out"},
    "evaluation": {"mode": "lazy", "every": 10},
}


def test_query_record_round_trips_through_its_json() -> None:
    query = parse_query(QUERY)
    controls = QueryControls.of(query).with_changes({"order": ["b", "a"], "paused": True})
    record = QueryRecord(query, "SELECT ...", controls, 1.0, 2.0, revision=3)
    stored = json.loads(record.to_json())
    assert stored["definition"] == dump_query(query) == record.definition
    back = QueryRecord.from_json("q", record.to_json(), QueryControls.from_hash(controls.to_hash()))
    assert back == record and back.query is not query  # parsed again from the stored form, equal


def test_controls_start_from_the_query_and_apply_to_it() -> None:
    query = parse_query(QUERY)
    controls = QueryControls.of(query)
    assert controls.evaluation == ModeDef("lazy", 10) and controls.order == "auto" and not controls.paused
    assert controls.apply(query) == query
    changed = controls.with_changes({"expiration": {"mode": "lazy", "every": 50}, "order": ["b", "a"]})
    effective = changed.apply(query)
    assert effective.expiration == ModeDef("lazy", 50) and effective.order == ("b", "a")
    assert effective.inputs == query.inputs and query.order == "auto"  # the definition is untouched
    assert changed.as_json() == {
        "evaluation": {"mode": "lazy", "every": 10},
        "expiration": {"mode": "lazy", "every": 50},
        "order": ["b", "a"],
        "paused": False,
    }
    assert set(changed.to_hash()) == set(CONTROL_ATTRIBUTES)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"evaluation": {"mode": "lazy"}}, "evaluation.every"),
        ({"expiration": {"mode": "eager", "every": 3}}, "expiration"),
        ({"order": "fast"}, "order"),
        ({"paused": "yes"}, "paused"),
    ],
)
def test_bad_control_values_name_their_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(QueryError) as info:
        QueryControls().with_changes(changes)
    assert info.value.field == field


def test_an_order_that_does_not_fit_the_query_fails_at_apply() -> None:
    query = parse_query(QUERY)
    controls = QueryControls().with_changes({"order": ["a", "zz"]})
    with pytest.raises(QueryError) as info:
        controls.apply(query)
    assert info.value.field == "order"
    with pytest.raises(ValueError, match="not writable"):
        QueryControls().with_changes({"memory_budget_bytes": 5})


def test_a_removed_control_left_in_redis_is_ignored() -> None:
    stored = {**QueryControls(paused=True).to_hash(), "memory_budget_bytes": "1000"}
    assert QueryControls.from_hash(stored) == QueryControls(paused=True)
    assert QueryControls.from_hash({}) == QueryControls()


def test_window_stats_copy_the_engine_counters_under_the_same_names() -> None:
    counters = WindowCounters(records=3, bytes=90, arrivals=11, late=1, first_ts=5.0, last_ts=9.0)
    published = WindowStats.of(counters, table_records=6, table_shared=2)
    for f in fields(WindowStats):
        if f.name not in ("table_records", "table_shared"):
            assert getattr(published, f.name) == getattr(counters, f.name), f.name
    assert (published.table_records, published.table_shared) == (6, 2)
    assert WindowStats.from_json(published.to_json()) == published


def test_stats_json_is_one_form_and_readers_tolerate_change() -> None:
    operator = OperatorStats(results=5, malformed={"a": 1}, latency_seconds={"count": 0}, watermark=1.5)
    assert OperatorStats.from_json(operator.to_json()) == operator
    assert json.loads(operator.to_json())["buffered"] is None  # not published: null, never 0
    read = OperatorStats.from_json('{"results": 2, "a_field_from_a_newer_worker": 1}')
    assert read == OperatorStats(results=2)
    fields_ = {"operator": operator.to_json(), "a": WindowStats(records=1).to_json()}
    assert PartitionStats.from_hash(3, fields_, "operator") == PartitionStats(
        3, operator, {"a": WindowStats(records=1)}
    )


def test_every_statistic_declares_how_it_is_exported() -> None:
    for record in (WindowStats, OperatorStats):
        declared = {f.name for f in stat_fields(record)}
        assert declared == {f.name for f in fields(record)}, record
    summaries = [
        f.stat.summary for r in (WindowStats, OperatorStats) for f in stat_fields(r) if f.stat.summary
    ]
    assert len(summaries) == len(set(summaries))  # no two fields claim the same query-table total


@pytest.mark.parametrize("fmt", INPUT_FORMATS)
def test_a_stream_keeps_every_declared_format(fmt: InputFormat) -> None:
    record = StreamRecord("s", "t", "ts", format=fmt)
    assert StreamRecord.from_json(record.to_json()) == record


def test_a_stream_with_an_undeclared_format_fails_loudly() -> None:
    raw = json.dumps({"name": "s", "topic": "t", "format": "protobuf"})
    with pytest.raises(ValueError, match="format must be"):
        StreamRecord.from_json(raw)
