"""The select list as `columns`: the JSON form, its checks, and what SQL select lists become."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin.query import QueryError, parse_query
from streamjoin.query.columns import Column, Star
from streamjoin.query.cql import format_cql
from streamjoin.query.dump import dump_query
from streamjoin.query.sql import SqlError, Stream, parse_sql

STREAMS = {"orders": Stream("shop.orders", "ts"), "pay": Stream("shop.pay", "ts")}
FROM = " FROM orders [RANGE 5] AS o JOIN pay [ROWS 2] AS p ON o.id = p.id"


def _query(**extra: Any) -> dict[str, Any]:
    return {
        "name": "q",
        "inputs": [
            {"stream": "o", "topic": "t.o", "timestamp": "ts", "window": {"range": 5}},
            {"stream": "p", "topic": "t.p", "timestamp": "ts", "window": {"rows": 2}},
        ],
        "where": [["o.id", "=", "p.id"]],
        "output": {"topic": "out"},
        **extra,
    }


def test_columns_parse_and_dump_back() -> None:
    columns = [
        {"name": "gross", "expr": {"op": "*", "args": [{"ref": ["o", "amount"]}, 1.2]}},
        {"star": "p"},
        {"name": "tier", "expr": {"op": "lower", "args": [{"ref": ["o", "user", "tier"]}]}},
    ]
    query = parse_query(_query(columns=columns))
    assert query.columns is not None and query.projects and query.select is None
    assert isinstance(query.columns[1], Star) and query.columns[1].stream == "p"
    assert isinstance(query.columns[0], Column) and query.columns[0].name == "gross"
    assert dump_query(query)["columns"] == columns
    assert parse_query(dump_query(query)) == query
    assert "columns" not in dump_query(parse_query(_query()))  # written only when given
    with pytest.raises(ValueError, match="no CQL form"):
        format_cql(dump_query(query))


@pytest.mark.parametrize(
    ("columns", "field", "needle"),
    [
        ([], "columns", "non-empty list"),
        ("o.a", "columns", "non-empty list"),
        ([{"star": "z"}], "columns[0].star", "unknown input 'z'"),
        ([{"star": ["o"]}], "columns[0].star", "unknown input"),
        ([{"name": "x"}], "columns[0]", '"name" and "expr"'),
        ([{"name": "", "expr": 1}], "columns[0].name", "non-empty string"),
        ([{"name": "ts", "expr": 1}], "columns[0].name", "a field of every output row"),
        ([{"name": "a", "expr": 1}, {"name": "a", "expr": 2}], "columns[1].name", "also column 0"),
        ([{"name": "a", "expr": {"op": "nope", "args": []}}], "columns[0].expr.op", "unknown operator"),
        ([{"name": "a", "expr": {"ref": ["z", "f"]}}], "columns[0].expr.ref", "unknown input 'z'"),
        ([{"name": "a", "expr": {"op": "lower", "args": [3]}}], "columns[0].expr", "lower() takes a string"),
        ([{"name": "a", "expr": {"op": "+", "args": ["x", 1]}}], "columns[0].expr", "'+' takes a number"),
        ([{"name": "a", "expr": {"op": "<", "args": ["x", 1]}}], "columns[0].expr", "compares a string"),
    ],
)
def test_bad_columns_are_refused(columns: Any, field: str, needle: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse_query(_query(columns=columns))
    assert caught.value.field == field and needle in caught.value.message, str(caught.value)


def test_select_and_columns_together_are_refused() -> None:
    with pytest.raises(QueryError, match="either select or columns"):
        parse_query(_query(select=["o.a"], columns=[{"star": "o"}]))


def test_null_and_unknown_types_are_accepted() -> None:
    """A NULL literal or a field (type unknown before a record) may go anywhere."""
    columns = [
        {"name": "a", "expr": {"op": "lower", "args": [None]}},
        {"name": "b", "expr": {"op": "+", "args": [{"ref": ["o", "s"]}, 1]}},
        {"name": "c", "expr": {"op": "round", "args": [{"ref": ["o", "x"]}, 2]}},
    ]
    assert parse_query(_query(columns=columns)).columns is not None


def test_sql_select_lists() -> None:
    assert "columns" not in parse_sql("SELECT *" + FROM, STREAMS)
    assert parse_sql("SELECT o.id, p.total" + FROM, STREAMS)["select"] == ["orders.id", "pay.total"]
    q = parse_sql("SELECT o.*, o.amount * 1.2 AS gross, abs(p.x), o.user.id, lower(o.name) n" + FROM, STREAMS)
    assert "select" not in q
    assert q["columns"] == [
        {"star": "orders"},
        {"name": "gross", "expr": {"op": "*", "args": [{"ref": ["orders", "amount"]}, 1.2]}},
        {"name": "expr_2", "expr": {"op": "abs", "args": [{"ref": ["pay", "x"]}]}},
        {"name": "orders_user_id", "expr": {"ref": ["orders", "user", "id"]}},
        {"name": "n", "expr": {"op": "lower", "args": [{"ref": ["orders", "name"]}]}},
    ]
    assert parse_sql("SELECT o.id AS oid" + FROM, STREAMS)["columns"] == [
        {"name": "oid", "expr": {"ref": ["orders", "id"]}}
    ]


@pytest.mark.parametrize(
    ("select", "needle", "position"),
    [
        ("count(*)", "aggregate function 'count' is not supported", 7),
        ("o.id, max(p.x) AS m", "aggregate function 'max' is not supported", 13),
        ("o.id AS id", "column name 'id' is a field of every output row", 7),
        ("o.a AS x, p.b AS x", "column name 'x' is also column 0", 17),
        ("o.id AS orders_id, o.id", "column name 'orders_id' is also column 0", 26),
        ("*, o.id", "* stands alone", 7),
        ("q.*", "unknown stream or alias 'q'", 7),
        ("o.* AS z", "s.* takes no AS", 7),
        ("o.id, foo(o.x) AS f", "unknown function 'foo'", 13),
        ("o.id, q.x AS f", "unknown stream or alias 'q'", 13),
        ("o.id, o.a + lower(2) AS f", "lower() takes a string, not a number (2)", 19),
        ("o.id, o.a < 'b' AND 1 < 'x' AS f", "'<' compares a number with a string", 27),
        ("o.id, o.a * 'x' AS f", "'*' takes a number, not a string ('x')", 13),
    ],
)
def test_bad_select_lists_are_errors_at_their_position(select: str, needle: str, position: int) -> None:
    with pytest.raises(SqlError) as caught:
        parse_sql(f"SELECT {select}{FROM}", STREAMS)
    assert needle in caught.value.problem, str(caught.value)
    assert caught.value.position == position, str(caught.value)


def test_group_by_is_refused_by_name() -> None:
    with pytest.raises(SqlError, match="not supported in a continuous join: GROUP BY"):
        parse_sql("SELECT o.id" + FROM + " GROUP BY o.id", STREAMS)
