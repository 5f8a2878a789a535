"""SQL as people write it: keyword stream names, aliases in WITHIN, typos, a missing `]`, units."""

from __future__ import annotations

import pytest

from streamjoin.query.cql import CqlError, parse_cql
from streamjoin.query.sql import SqlError, Stream, parse_sql

STREAMS = {name: Stream(f"t.{name}", "ts") for name in ("temp", "order", "select", "orders", "payments")}


@pytest.mark.parametrize("name", ["temp", "order", "select"])
def test_a_stream_named_like_a_keyword_is_a_stream(name: str) -> None:
    text = f"SELECT {name}.id FROM {name} [RANGE 5], orders [ROWS 2] WHERE {name}.id = orders.id"
    q = parse_sql(text, STREAMS)
    assert q["inputs"][0] == {"stream": name, "topic": f"t.{name}", "timestamp": "ts", "window": {"range": 5}}
    assert q["where"] == [[f"{name}.id", "=", "orders.id"]] and q["select"] == [f"{name}.id"]
    joined = parse_sql(f"SELECT * FROM orders o JOIN {name} [ROWS 1] AS t ON o.k = t.k", STREAMS)
    assert joined["inputs"][1]["stream"] == name and joined["where"] == [["orders.k", "=", f"{name}.k"]]


def test_cql_accepts_temp_too() -> None:  # the same text in both languages
    text = "SELECT * FROM temp [RANGE 5], orders [ROWS 2] WHERE temp.id = orders.id"
    assert parse_cql(text, STREAMS) == parse_sql(text, STREAMS)


def test_within_takes_aliases_and_stream_names() -> None:
    by_alias = parse_sql(
        "SELECT * FROM orders o, payments p WITHIN (o, p) 10 SECONDS WHERE o.id = p.id", STREAMS
    )
    by_name = parse_sql(
        "SELECT * FROM orders o, payments p WITHIN (orders, p) 10000 WHERE o.id = p.id", STREAMS
    )
    assert by_alias["within"] == by_name["within"] == [["orders", "payments", 10_000]]
    assert "window" not in by_alias["inputs"][0]


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        (
            "SELEC * FROM orders o, payments p WHERE o.id = p.id",
            "unknown keyword 'SELEC' (did you mean SELECT?)",
            0,
        ),
        (
            "SELECT * FROM orders o JION payments p ON o.id = p.id",
            "unknown keyword 'JION' (did you mean JOIN?)",
            23,
        ),
        ("SELECT * FORM orders", "unknown keyword 'FORM' (did you mean FROM?)", 9),
        (
            "SELECT * FROM orders o, payments p WHER o.id = p.id",
            "unknown keyword 'WHER' (did you mean WHERE?)",
            35,
        ),
        (
            "SELECT * FROM orders o, payments p WHERE o.id = p.id ADN o.x = 1",
            "unknown keyword 'ADN' (did you mean AND?)",
            53,
        ),
        ("UPDATE orders SET x = 1", "expected SELECT, found 'UPDATE'", 0),
        ("SELECT * FROM orders o, payments p WHERE o.id = p.id p", "unexpected 'p'", 53),
    ],
)
def test_typos_name_the_keyword_meant(text: str, message: str, position: int) -> None:
    with pytest.raises(SqlError) as info:
        parse_sql(text, STREAMS)
    assert info.value.problem == message and info.value.position == position, str(info.value)


@pytest.mark.parametrize(
    ("text", "expected_at"),
    [
        # the `]` of orders' window is missing: `payments`' `]` used to close it, 27 characters on
        ("SELECT * FROM orders [RANGE 5 o JOIN payments [ROWS 2] p ON o.id = p.id", "o JOIN"),
        ("SELECT * FROM orders [RANGE 5] o JOIN payments [ROWS 2 p ON o.id = p.id", "p ON"),
        ("SELECT * FROM orders [RANGE 5] o, payments [ROWS 2", None),
        ("SELECT * FROM orders [ROWS 2 + 1] o, payments [ROWS 2] p WHERE o.id = p.id", "+ 1"),
    ],
)
def test_a_missing_bracket_is_reported_where_it_was_expected(text: str, expected_at: str | None) -> None:
    with pytest.raises(SqlError) as info:
        parse_sql(text, STREAMS)
    position = len(text) if expected_at is None else text.index(expected_at)
    assert info.value.problem.startswith("expected ']', found ") and info.value.position == position, str(
        info.value
    )


UNITS = "use MS, MILLISECOND(S), SECOND(S), MINUTE(S), HOUR(S) or DAY(S)"


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("SELECT * FROM orders [RANGE 5 FORTNIGHTS] o, payments [ROWS 2] p WHERE o.id = p.id", "FORTNIGHTS"),
        ("SELECT * FROM orders o, payments p WITHIN (o, p) 5 SECS WHERE o.id = p.id", "SECS"),
        ("SELECT * FROM orders o JOIN payments p WITHIN 5 MINS ON o.id = p.id", "MINS"),
        ("SELECT * FROM orders o JOIN payments p ON o.ts < p.ts + INTERVAL '5' WEEK", "WEEK"),
    ],
)
def test_an_unknown_unit_lists_the_valid_ones(text: str, unit: str) -> None:
    with pytest.raises(SqlError) as info:
        parse_sql(text, STREAMS)
    assert info.value.problem == f"unknown time unit {unit!r}: {UNITS}", str(info.value)
    at = text.index(unit) if "INTERVAL" not in text else text.index("'5'")  # the INTERVAL's size
    assert info.value.position == at


def test_cql_lists_the_units_too() -> None:
    text = "SELECT * FROM orders [RANGE 5 WEEKS], payments [ROWS 1] WHERE orders.k = payments.k"
    with pytest.raises(CqlError) as info:
        parse_cql(text, STREAMS)
    assert info.value.problem == f"unknown time unit 'WEEKS': {UNITS}"
    assert info.value.position == text.index("WEEKS")
