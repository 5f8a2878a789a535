"""The SQL front end: what it accepts, the query JSON it gives, and errors with their positions."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin.query import QueryError, parse_query
from streamjoin.query.dump import dump_query
from streamjoin.query.expr import parse_expr
from streamjoin.query.expr_eval import compile_predicate, compile_value
from streamjoin.query.sql import SqlError, Stream, parse_sql
from streamjoin.query.text import expand_text, streams_from_json

STREAMS = {"orders": Stream("shop.orders", "ts"), "pay": Stream("shop.pay", "ts"), "ship": Stream("s", "ts")}


def _full(text: str) -> dict[str, Any]:
    return {"name": "q", "output": {"topic": "out"}, **parse_sql(text, STREAMS)}


def test_joins_aliases_windows_and_the_split_into_where_and_filter() -> None:
    q = parse_sql(
        "SELECT * FROM orders [RANGE 10 SECONDS] AS o JOIN pay [ROWS 50] AS p ON o.id = p.id "
        "JOIN ship [PARTITION BY w ROWS 2] s ON s.id = p.id "
        "WHERE (o.amount * 1.2 > p.total OR o.user.id IN (1, 2)) AND o.n BETWEEN 1 AND 3 "
        "AND p.fee IS NULL AND lower(s.c) = 'x' AND o.k >= 4",
        STREAMS,
    )
    assert [i["window"] for i in q["inputs"]] == [
        {"range": 10_000},
        {"rows": 50},
        {"rows": 2, "partition_by": "w"},
    ]
    assert q["inputs"][0]["topic"] == "shop.orders"
    assert q["where"] == [["orders.id", "=", "pay.id"], ["ship.id", "=", "pay.id"], ["orders.k", ">=", 4]]
    terms = q["filter"]["args"]
    assert terms[0]["op"] == "or"
    assert terms[0]["args"][1] == {"op": "in", "args": [{"ref": ["orders", "user", "id"]}, 1, 2]}
    assert terms[1] == {"op": "between", "args": [{"ref": ["orders", "n"]}, 1, 3]}
    assert terms[2] == {"op": "is_null", "args": [{"ref": ["pay", "fee"]}]}
    assert terms[3] == {"op": "=", "args": [{"op": "lower", "args": [{"ref": ["ship", "c"]}]}, "x"]}
    query = parse_query(
        _full("SELECT * FROM orders [RANGE 5] o, pay [ROWS 2] p WHERE o.id = p.id AND o.a + 1 > p.b")
    )
    assert parse_query(dump_query(query)) == query


def test_cql_clauses_keep_working_in_sql() -> None:
    q = parse_sql(
        "SELECT o.id, p.total FROM orders [RANGE 100 STRICT] AS o JOIN pay AS p ON o.id = p.id "
        "WITHIN (orders, pay) 50 WHERE o.x IS NOT NULL SHED MEMORY 40 POLICY simp SEED 3;",
        STREAMS,
    )
    assert q["inputs"][0]["window"] == {"range": 100, "strict": True}
    assert "window" not in q["inputs"][1]
    assert q["within"] == [["orders", "pay", 50]]
    assert q["shedding"] == {"memory": 40, "policy": "simp", "seed": 3}
    assert q["select"] == ["orders.id", "pay.total"]
    assert q["filter"] == {"op": "not", "args": [{"op": "is_null", "args": [{"ref": ["orders", "x"]}]}]}


def test_a_filter_with_shedding_is_refused_until_shed_eval_reads_filters() -> None:
    head = "SELECT * FROM orders [RANGE 5] o JOIN pay [RANGE 5] p ON o.id = p.id"
    text = f"{head} WHERE o.x IS NULL SHED MEMORY 4 POLICY simp"
    with pytest.raises(QueryError, match="filter: a filter expression cannot be combined with shedding"):
        parse_query(_full(text))


def test_null_literals_and_dotted_strings_go_to_the_filter() -> None:
    q = parse_sql(
        "SELECT * FROM orders o JOIN pay p ON o.id = p.id WHERE o.a = NULL AND o.s = 'a.b'", STREAMS
    )
    assert q["where"] == [["orders.id", "=", "pay.id"]]
    assert len(q["filter"]["args"]) == 2


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("SELECT * FROM orders [RANGE 0] o JOIN pay p ON o.id = p.id", "a RANGE window must be > 0", 28),
        ("SELECT * FROM orders o JOIN pay p ON o.id = q.id", "unknown stream or alias 'q'", 44),
        ("SELECT * FROM orders o JOIN nope p ON o.id = p.id", "unknown stream 'nope'", 28),
        ("SELECT * FROM orders o JOIN pay p ON o.id = p.id WHERE foo(o.x) > 1", "unknown function 'foo'", 55),
        ("SELECT * FROM orders o LEFT JOIN pay p ON o.id = p.id", "only inner joins", 33),
        ("SELECT * FROM orders o JOIN pay p ON o.id = p.id WHERE id > 1", "qualify the field", 55),
        ("SELECT * FROM orders o JOIN pay p ON o.id = p.id WHERE o.s = 'x", "unterminated string", 61),
        (
            "SELECT * FROM orders o JOIN pay p ON o.id = p.id WITHIN (orders, ship) 5",
            "'ship' is not in FROM",
            65,
        ),
        ("SELECT * FROM orders o JOIN pay p ON o.id = p.id SHED MEMORY 0 POLICY simp", "MEMORY must be", 61),
        ("SELECT * FROM orders o JOIN pay p ON o.id = p.id GROUP BY o.id", "not supported", 58),
        ("SELECT * FROM orders o JOIN orders p ON o.id = p.id", "appears twice", 28),
        ("SELECT x.* FROM orders o JOIN pay p ON o.id = p.id", "unknown stream or alias 'x'", 7),
    ],
)
def test_errors_name_the_problem_and_its_position(text: str, message: str, position: int) -> None:
    with pytest.raises(SqlError) as info:
        parse_sql(text, STREAMS)
    assert info.value.field == "sql"
    assert message in str(info.value), str(info.value)
    assert info.value.position == position, str(info.value)
    assert f"at position {position} " in str(info.value)


def test_error_positions_count_lines() -> None:
    text = "SELECT *\nFROM orders [ROWS 2] o\nJOIN pay [RANGE -1] p ON o.id = p.id"
    with pytest.raises(SqlError) as info:
        parse_sql(text, STREAMS)
    assert info.value.position == text.index("-1")
    assert "(line 3, column 17)" in str(info.value)


def test_a_parse_error_points_at_the_token() -> None:
    text = "SELECT * FROM orders o JOIN pay p ON o.id = p.id WHERE o.x >"
    with pytest.raises(SqlError) as info:
        parse_sql(text, STREAMS)
    assert info.value.position in (len(text) - 1, len(text))


def test_a_disconnected_join_graph_is_refused_by_the_query_check() -> None:
    with pytest.raises(QueryError, match="not connected"):
        parse_query(_full("SELECT * FROM orders [RANGE 5] o, pay [RANGE 5] p WHERE o.id = p.id OR o.x = 1"))


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"op": "xor", "args": [1, 2]}, "filter.op"),
        ({"op": "between", "args": [1, 2]}, "filter.args"),
        ({"ref": ["nope", "x"]}, "filter.ref"),
        ({"ref": ["a"]}, "filter.ref"),
        ({"op": "not", "args": [[1]]}, "filter.args[0]"),
        ({"op": "=", "args": [1, 2], "x": 1}, "filter"),
    ],
)
def test_bad_filter_json_names_the_field(raw: Any, field: str) -> None:
    with pytest.raises(QueryError) as info:
        parse_expr(raw, frozenset({"a", "b"}), "filter")
    assert info.value.field == field


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ({"op": "and", "args": [False, None]}, False),
        ({"op": "and", "args": [True, None]}, None),
        ({"op": "or", "args": [True, None]}, True),
        ({"op": "not", "args": [None]}, None),
        ({"op": "<", "args": ["a", 3]}, None),
        ({"op": "/", "args": [1, 0]}, None),
        ({"op": "+", "args": [1, True]}, None),
        ({"op": "in", "args": [3, 1, None]}, None),
        ({"op": "in", "args": [1, 1, None]}, True),
        ({"op": "is_null", "args": [{"ref": ["a", "missing", "deep"]}]}, True),
        ({"op": "lower", "args": [5]}, None),
        ({"op": "round", "args": [2.567, 1]}, 2.6),
        ({"op": "coalesce", "args": [None, {"ref": ["a", "n"]}]}, 4),
        ({"op": "length", "args": [{"ref": ["a", "u", "name"]}]}, 3),
        ({"op": "%", "args": [{"ref": ["a", "n"]}, 3]}, 1),
    ],
)
def test_three_valued_evaluation(raw: Any, value: Any) -> None:
    expr = parse_expr(raw, frozenset({"a"}), "filter")
    record = {"n": 4, "u": {"name": "bob"}}
    assert compile_value(expr, {"a": 0})([record]) == value
    assert compile_predicate(expr, {"a": 0})([record]) is (value is True)


def test_sql_text_in_a_query_json_with_a_streams_object() -> None:
    streams = streams_from_json(
        {"orders": {"topic": "shop.orders", "timestamp": "ts"}, "pay": {"timestamp": "ts"}}
    )
    raw = expand_text(
        {
            "name": "q",
            "output": {"topic": "o"},
            "algorithm": "nlj",
            "sql": "SELECT * FROM orders o, pay p WHERE o.i = p.i",
        },
        streams,
    )
    assert raw["inputs"][1]["topic"] == "pay" and raw["algorithm"] == "nlj"
    with pytest.raises(QueryError, match="--streams"):
        expand_text({"name": "q", "sql": "SELECT 1"}, None)
    with pytest.raises(QueryError, match="not both"):
        expand_text({"name": "q", "sql": "x", "where": []}, streams)


def test_deep_nesting_is_a_clear_error_not_a_crash() -> None:
    head = "SELECT * FROM orders o JOIN pay p ON o.id = p.id WHERE "
    with pytest.raises(SqlError, match="parentheses nested deeper than 32"):
        parse_sql(head + "(" * 40 + "o.x = 1" + ")" * 40, STREAMS)
    with pytest.raises(SqlError, match="nests too deeply"):
        parse_sql(head + "NOT " * 3000 + "o.x = 1", STREAMS)
    with pytest.raises(QueryError, match="nested deeper than 64"):
        windowed = "SELECT * FROM orders [RANGE 5] o JOIN pay [ROWS 1] p ON o.id = p.id WHERE "
        parse_query(_full(windowed + " + ".join(["o.x"] * 100) + " > 1"))
