"""A plan the joiner cannot run correctly is refused with its reason (the query's status shows it)."""

from __future__ import annotations

from typing import Any

from streamjoin.joiner.layout.query_layout import unsupported_rekeying
from streamjoin.query import parse_query
from streamjoin.query.partitioning import plan_partitioning


def _query(formats: dict[str, str], keys: dict[str, str | None]) -> Any:
    inputs = []
    for s in ("a", "b"):
        spec: dict[str, Any] = {
            "stream": s,
            "topic": s,
            "timestamp": "ts",
            "format": formats[s],
            "window": {"range": 10},
        }
        if keys[s] is not None:
            spec["key"] = keys[s]
        inputs.append(spec)
    return parse_query(
        {"name": "q", "inputs": inputs, "where": [["a.k", "=", "b.k"]], "output": {"topic": "o"}}
    )


def test_an_avro_input_re_keyed_across_partitions_is_refused_with_the_reason() -> None:
    q = _query({"a": "avro", "b": "json"}, {"a": None, "b": None})
    reason = unsupported_rekeying(q, plan_partitioning(q, {"a": 4, "b": 4}))
    assert reason is not None and "['a']" in reason and "Avro" in reason and "4 partitions" in reason


def test_avro_inputs_read_directly_or_into_one_partition_run() -> None:
    keyed = _query({"a": "avro", "b": "avro"}, {"a": "k", "b": "k"})
    assert unsupported_rekeying(keyed, plan_partitioning(keyed, {"a": 4, "b": 4})) is None
    one = _query({"a": "avro", "b": "json"}, {"a": None, "b": None})
    assert unsupported_rekeying(one, plan_partitioning(one, {"a": 1, "b": 1})) is None
    json_only = _query({"a": "json", "b": "json"}, {"a": None, "b": None})
    assert unsupported_rekeying(json_only, plan_partitioning(json_only, {"a": 4, "b": 4})) is None
