"""The query grammar is declared once (`streamjoin.query.grammar`) and everything reads it.

- Every declared name parses, is dumped as written, and parses back to the same definition.
- A name outside a set is refused with a message listing the whole set, in the JSON and in CQL.
- What runs a name exists for each, and only for declared names: the engine's algorithms, schedules
  and expirations, the shedding policies and combine functions, the predicates' operators.
"""

from __future__ import annotations

from typing import Any

import pytest

import streamjoin.engine  # noqa: F401  (registers every expiration and window model)
from streamjoin.engine.algorithm import ALGORITHMS
from streamjoin.engine.schedule import EXPIRATIONS, SCHEDULES
from streamjoin.query import QueryError, parse_query
from streamjoin.query import grammar as g
from streamjoin.query.cql import Stream, parse_cql
from streamjoin.query.dump import dump_query
from streamjoin.query.predicates import OPERATORS
from streamjoin.shedding.entry import COMBINE
from streamjoin.shedding.policy import POLICIES

_AVRO_SCHEMA = {"type": "record", "name": "Row", "fields": [{"name": "query", "type": "string"}]}


def _base(**fields: Any) -> dict[str, Any]:
    return {
        "name": "q",
        "inputs": [
            {"stream": "a", "timestamp": "ts", "window": {"range": 10}},
            {"stream": "b", "timestamp": "ts", "window": {"rows": 3}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "o"},
        **fields,
    }


def _with_window(kind: str) -> dict[str, Any]:
    raw = _base()
    raw["inputs"][0]["window"] = {kind: 5}
    return raw


def _with_input_format(name: str) -> dict[str, Any]:
    raw = _base()
    raw["inputs"][0]["format"] = name
    return raw


def _with_output_format(name: str) -> dict[str, Any]:
    output: dict[str, Any] = {"topic": "o", "format": name}
    if name == "avro":
        output["schema"] = _AVRO_SCHEMA
    return _base(output=output)


def _with_comparison(op: str) -> dict[str, Any]:
    return _base(where=[["a.k", "=", "b.k"], ["a.n", op, "b.n"]])


def _with_expiration(mode: str) -> dict[str, Any]:
    return _base(expiration={"mode": mode, "every": 5} if mode == "lazy" else {"mode": mode})


def _with_evaluation(mode: str) -> dict[str, Any]:
    return _base(evaluation={"mode": mode, "every": 5} if mode == "lazy" else {"mode": mode})


def _shed(**fields: Any) -> dict[str, Any]:
    return _base(shedding={"memory": 10, "policy": "simp", **fields})


# (the concept's names, the query JSON using one name, where the dumped JSON holds it)
_USES: list[tuple[tuple[str, ...], Any, Any]] = [
    (g.ALGORITHM_NAMES, lambda n: _base(algorithm=n), lambda d: d["algorithm"]),
    (g.EVALUATION_MODES, _with_evaluation, lambda d: d["evaluation"]["mode"]),
    (g.EXPIRATION_MODES, _with_expiration, lambda d: d["expiration"]["mode"]),
    (g.WINDOW_KINDS, _with_window, lambda d: next(iter(d["inputs"][0]["window"]))),
    (g.COMPARISONS, _with_comparison, lambda d: d["where"][1][1]),
    (g.START_NAMES, lambda n: _base(start=n), lambda d: d["start"]),
    ((g.AUTO_ORDER,), lambda n: _base(order=n), lambda d: d["order"]),
    (g.INPUT_FORMATS, _with_input_format, lambda d: d["inputs"][0].get("format", "json")),
    (g.OUTPUT_FORMATS, _with_output_format, lambda d: d["output"].get("format", "envelope")),
    (g.POLICY_NAMES, lambda n: _shed(policy=n), lambda d: d["shedding"]["policy"]),
    (g.COMBINE_NAMES, lambda n: _shed(combine=n), lambda d: d["shedding"]["combine"]),
]
_EVERY_NAME = [(name, use, found) for names, use, found in _USES for name in names]


@pytest.mark.parametrize(("name", "use", "found"), _EVERY_NAME, ids=[n for n, _, _ in _EVERY_NAME])
def test_every_declared_name_round_trips(name: str, use: Any, found: Any) -> None:
    query = parse_query(use(name))
    dumped = dump_query(query)
    assert found(dumped) == name
    assert parse_query(dumped) == query


@pytest.mark.parametrize(
    ("raw", "field", "names"),
    [
        (_base(algorithm="sort"), "algorithm", g.ALGORITHM_NAMES),
        (_base(evaluation={"mode": "probe"}), "evaluation.mode", g.EVALUATION_MODES),
        (_base(expiration={"mode": "never"}), "expiration.mode", g.EXPIRATION_MODES),
        (_base(start="now"), "start", g.START_NAMES),
        (_with_input_format("csv"), "inputs[0].format", g.INPUT_FORMATS),
        (_base(output={"topic": "o", "format": "xml"}), "output.format", g.OUTPUT_FORMATS),
        (_shed(policy="best"), "shedding.policy", g.POLICY_NAMES),
        (_shed(combine="median"), "shedding.combine", g.COMBINE_NAMES),
        (_with_window("partition_by"), "inputs[0].window", g.WINDOW_KINDS),
        (_with_comparison("=="), "where[1][1]", g.COMPARISONS),
    ],
)
def test_a_name_outside_its_set_is_refused_listing_the_set(
    raw: dict[str, Any], field: str, names: tuple[str, ...]
) -> None:
    with pytest.raises(QueryError) as caught:
        parse_query(raw)
    assert caught.value.field == field
    for name in names:
        assert repr(name) in caught.value.message or f'"{name}"' in caught.value.message


_STREAMS = {"a": Stream("a", "ts"), "b": Stream("b", "ts")}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("SELECT * FROM a [SLIDE 1], b [ROWS 1] WHERE a.k = b.k", [k.upper() for k in g.WINDOW_KINDS]),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.k b.k", list(g.COMPARISONS)),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.k = b.k SHED MEMORY 4 POLICY x", g.POLICY_NAMES),
    ],
)
def test_cql_errors_list_the_declared_names(text: str, words: list[str]) -> None:
    with pytest.raises(QueryError) as caught:
        parse_cql(text, _STREAMS)
    for word in words:
        assert word in caught.value.message


def test_every_cql_comparison_is_a_declared_one() -> None:
    for op in (*g.COMPARISONS, "<>"):
        raw = parse_cql(f"SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.k = b.k AND a.n {op} b.n", _STREAMS)
        assert raw["where"][1][1] in g.COMPARISONS


@pytest.mark.parametrize(
    ("registered", "declared"),
    [
        (ALGORITHMS, g.ALGORITHM_NAMES),
        (SCHEDULES, g.EVALUATION_MODES),
        (EXPIRATIONS, g.EXPIRATION_MODES),
        (POLICIES, g.POLICY_NAMES),
        (COMBINE, g.COMBINE_NAMES),
        (OPERATORS, g.COMPARISONS),
    ],
    ids=["algorithms", "schedules", "expirations", "policies", "combine", "comparisons"],
)
def test_what_runs_a_name_exists_for_each_declared_name_only(
    registered: Any, declared: tuple[str, ...]
) -> None:
    assert set(registered) == set(declared)
