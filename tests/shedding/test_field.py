"""The `shedding` query field: JSON parsing with clear errors, dump round trip, the CQL SHED clause."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin.query import QueryError, parse_query
from streamjoin.query.cql import CqlError, Stream, format_cql, parse_cql
from streamjoin.query.dump import dump_query
from streamjoin.query.shedding import SheddingDef

BASE: dict[str, Any] = {
    "name": "q",
    "output": {"topic": "o"},
    "inputs": [{"stream": s, "timestamp": "t", "window": {"range": 3}} for s in ("a", "b", "c")],
    "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
}
STREAMS = {s: Stream(f"t.{s}", "t") for s in ("a", "b", "shed")}


def test_absent_is_none_and_dump_leaves_it_out() -> None:
    query = parse_query(BASE)
    assert query.shedding is None
    assert "shedding" not in dump_query(query)


def test_defaults_and_round_trip() -> None:
    query = parse_query({**BASE, "shedding": {"memory": 30, "policy": "dgl"}})
    assert query.shedding == SheddingDef(memory=30, policy="dgl", importance=None, combine="min", seed=0)
    assert query.shedding.share(3) == 10
    full = {"memory": 31, "policy": "random", "importance": "imp", "combine": "avg", "seed": -4}
    query = parse_query({**BASE, "shedding": full})
    assert dump_query(query)["shedding"] == full
    assert parse_query(dump_query(query)) == query


@pytest.mark.parametrize(
    ("shedding", "field", "words"),
    [
        ([], "shedding", "JSON object"),
        ({"memory": 3, "policy": "simp", "budget": 1}, "shedding", "unknown field(s) ['budget']"),
        ({"policy": "simp"}, "shedding.memory", "integer >= 3"),
        ({"memory": 2, "policy": "simp"}, "shedding.memory", "integer >= 3 (one record per window)"),
        ({"memory": 3.5, "policy": "simp"}, "shedding.memory", "integer"),
        ({"memory": True, "policy": "simp"}, "shedding.memory", "integer"),
        ({"memory": 3}, "shedding.policy", 'must be "random", "frequency"'),
        ({"memory": 3, "policy": "PROB"}, "shedding.policy", "not 'PROB'"),
        ({"memory": 3, "policy": "simp", "importance": ""}, "shedding.importance", "record field"),
        ({"memory": 3, "policy": "simp", "importance": 5}, "shedding.importance", "record field"),
        ({"memory": 3, "policy": "simp", "combine": "median"}, "shedding.combine", "not 'median'"),
        ({"memory": 3, "policy": "simp", "seed": "1"}, "shedding.seed", "integer"),
    ],
)
def test_bad_shedding_names_the_field(shedding: Any, field: str, words: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse_query({**BASE, "shedding": shedding})
    assert caught.value.field == field
    assert words in caught.value.message


def test_cql_shed_clause_parses_formats_and_round_trips() -> None:
    text = (
        "SELECT * FROM a [RANGE 3], shed [RANGE 3] WHERE a.k = shed.k "
        "SHED MEMORY 40 POLICY SimpProb IMPORTANCE imp COMBINE max SEED 1;"
    )
    got = parse_cql(text, STREAMS)
    assert got["shedding"] == {
        "memory": 40,
        "policy": "simpprob",
        "importance": "imp",
        "combine": "max",
        "seed": 1,
    }
    formatted = format_cql(got)
    assert formatted == (
        "SELECT * FROM a [RANGE 3], shed [RANGE 3] WHERE a.k = shed.k "
        "SHED MEMORY 40 POLICY simpprob IMPORTANCE imp COMBINE max SEED 1"
    )
    assert parse_cql(formatted, STREAMS) == got
    minimal = parse_cql(
        "SELECT * FROM a [RANGE 3], b [RANGE 3] WHERE a.k = b.k SHED MEMORY 4 POLICY dgl", STREAMS
    )
    assert minimal["shedding"] == {"memory": 4, "policy": "dgl"}
    query = parse_query({**minimal, "name": "n", "output": {"topic": "o"}})
    assert query.shedding == SheddingDef(4, "dgl")
    assert format_cql(dump_query(query)).endswith("SHED MEMORY 4 POLICY dgl")


@pytest.mark.parametrize(
    ("clause", "words"),
    [
        ("SHED POLICY simp", "expected MEMORY"),
        ("SHED MEMORY 0 POLICY simp", "MEMORY must be an integer > 0"),
        ("SHED MEMORY 2.5 POLICY simp", "MEMORY must be an integer > 0"),
        ("SHED MEMORY 4", "expected POLICY"),
        ("SHED MEMORY 4 POLICY best", "expected a policy (random, frequency"),
        ("SHED MEMORY 4 POLICY simp COMBINE median", "expected a combine function"),
        ("SHED MEMORY 4 POLICY simp SEED x", "expected a seed"),
        ("SHED MEMORY 4 POLICY simp SEED 1.5", "SEED must be an integer"),
        ("SHED MEMORY 4 POLICY simp EXTRA", "unexpected 'EXTRA'"),
    ],
)
def test_cql_shed_clause_errors_name_the_position(clause: str, words: str) -> None:
    text = f"SELECT * FROM a [RANGE 3], b [RANGE 3] WHERE a.k = b.k {clause}"
    with pytest.raises(CqlError) as caught:
        parse_cql(text, STREAMS)
    assert words in caught.value.message
    assert "at position" in caught.value.message
