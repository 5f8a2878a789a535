"""The CQL subset: examples, every error with its position, and property tests (round trip, fuzz)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.query import QueryError, parse_query
from streamjoin.query.cql import CqlError, Stream, format_cql, parse_cql

STREAMS = {
    "a": Stream("net.a", "ts"),
    "b": Stream("net.b", "ts"),
    "c": Stream("net.c", None),
    "select": Stream("kw.topic", "time"),
}


def test_the_spec_example_gives_the_spec_json() -> None:
    text = (
        "SELECT * FROM a [RANGE 100], b [ROWS 50], c [RANGE 200] "
        "WHERE a.src = b.src AND b.src = c.src AND a.bytes > c.bytes"
    )
    got = parse_cql(text, STREAMS)
    assert got == {
        "inputs": [
            {"stream": "a", "topic": "net.a", "timestamp": "ts", "window": {"range": 100}},
            {"stream": "b", "topic": "net.b", "timestamp": "ts", "window": {"rows": 50}},
            {"stream": "c", "topic": "net.c", "timestamp": None, "window": {"range": 200}},
        ],
        "where": [["a.src", "=", "b.src"], ["b.src", "=", "c.src"], ["a.bytes", ">", "c.bytes"]],
    }
    query = parse_query({**got, "name": "flows", "output": {"topic": "flows.out"}})
    assert query.stream_names == ("a", "b", "c")


def test_projection_partitioned_rows_literals_units_and_case() -> None:
    text = """select a.x, b."src ip" from a [range 2 seconds], b [Partition By host Rows 5]
              where (a.src = b.src and a.kind != 'it''s') AND b.n <> -1.5 and a.ok = TRUE and a.z = null;"""
    got = parse_cql(text, STREAMS)
    assert got["select"] == ["a.x", "b.src ip"]
    assert got["inputs"][0]["window"] == {"range": 2000}
    assert got["inputs"][1]["window"] == {"rows": 5, "partition_by": "host"}
    assert got["where"] == [
        ["a.src", "=", "b.src"],
        ["a.kind", "!=", "it's"],
        ["b.n", "!=", -1.5],
        ["a.ok", "=", True],
        ["a.z", "=", None],
    ]


def test_keywords_as_names_are_quoted_and_fields_may_be_keywords() -> None:
    got = parse_cql('SELECT * FROM "select" [ROWS 1], a [RANGE 1] WHERE "select".range = a.from', STREAMS)
    assert got["where"] == [["select.range", "=", "a.from"]]
    assert format_cql(got) == 'SELECT * FROM "select" [ROWS 1], a [RANGE 1] WHERE "select".range = a.from'


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ("SELEC * FROM a [RANGE 1]", 0, "expected SELECT"),
        ("SELECT * FROM x [RANGE 1]", 14, "unknown stream 'x'"),
        ("SELECT * FROM a [RANGE 0], b [ROWS 1]", 23, "RANGE window must be > 0"),
        ("SELECT * FROM a [RANGE -5], b [ROWS 1]", 23, "RANGE window must be > 0"),
        ("SELECT * FROM a [ROWS 1.5], b [ROWS 1]", 22, "integer > 0"),
        ("SELECT * FROM a [ROWS 0], b [ROWS 1]", 22, "integer > 0"),
        ("SELECT * FROM a [RANGE 1], a [ROWS 1]", 27, "appears twice"),
        ("SELECT * FROM a [SLIDE 1]", 17, "expected RANGE, ROWS or PARTITION BY"),
        ("SELECT * FROM a [RANGE 1] b [ROWS 1]", 26, "unexpected 'b'"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.x = b.x OR a.y = b.y", 54, "OR is not supported"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE x = b.x", 44, "qualify the field"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE c.x = b.x", 44, "'c' is not in FROM"),
        ("SELECT c.x FROM a [RANGE 1], b [ROWS 1]", 7, "'c' is not in FROM"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.x = 'b.y'", 50, "would read as a field"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE 1 = 2", 44, "must mention a field"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.x = 'open", 50, "unexpected character"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.x ~ b.x", 48, "unexpected character '~'"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.x b.x", 48, "expected a comparison"),
        ("SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE (a.x = b.x", 54, "expected ')'"),
        ("SELECT * FROM select [RANGE 1]", 14, "found keyword 'select'"),
        ("SELECT * FROM a [RANGE 1e999]", 23, "must be finite"),
        ("SELECT *\nFROM a [RANGE 1],\n  zz [ROWS 1]", 29, "line 3, column 3"),
    ],
)
def test_errors_name_the_position(text: str, position: int, words: str) -> None:
    with pytest.raises(CqlError) as caught:
        parse_cql(text, STREAMS)
    assert caught.value.field == "cql"
    assert caught.value.position == position, caught.value.message
    assert words in caught.value.message
    assert f"at position {position}" in caught.value.message


def test_too_deep_or_too_long_text_is_an_error_not_a_crash() -> None:
    deep = "SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE " + "(" * 500 + "a.x = b.x" + ")" * 500
    with pytest.raises(CqlError, match="nested deeper"):
        parse_cql(deep, STREAMS)
    with pytest.raises(CqlError, match="longer than"):
        parse_cql("SELECT " + " " * 70_000, STREAMS)


# ---- properties ----------------------------------------------------------------------------------

_names = st.sampled_from(["a", "b", "c", "select"])
_fields = st.one_of(
    st.sampled_from(["x", "src", "from", "range", "src ip", 'q"t', "1st"]), st.text(min_size=1)
)
_windows = st.one_of(
    st.builds(lambda n: {"range": n}, st.integers(1, 10**12)),
    st.builds(lambda n: {"range": n}, st.floats(1e-6, 1e12, allow_nan=False)),
    st.builds(lambda n: {"rows": n}, st.integers(1, 10**6)),
    st.builds(
        lambda n, f: {"rows": n, "partition_by": f}, st.integers(1, 99), st.sampled_from(["k", "AND", "x y"])
    ),
)
_literals = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**15), 10**15),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text().filter(lambda s: not ("." in s and s.partition(".")[0].isidentifier() and s.partition(".")[2])),
)


@st.composite
def _queries(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    inputs = [
        {"stream": n, "topic": STREAMS[n].topic, "timestamp": STREAMS[n].timestamp, "window": draw(_windows)}
        for n in names
    ]
    refs = st.builds(lambda s, f: f"{s}.{f}", st.sampled_from(names), _fields)
    ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
    predicate = st.one_of(
        st.tuples(refs, ops, st.one_of(refs, _literals)), st.tuples(_literals, ops, refs)
    ).map(list)
    query: dict[str, Any] = {"inputs": inputs, "where": draw(st.lists(predicate, max_size=5))}
    if draw(st.booleans()):
        query["select"] = draw(st.lists(refs, min_size=1, max_size=4))
    return query


@settings(max_examples=300, deadline=None)
@given(_queries())
def test_format_then_parse_is_the_identity(query: dict[str, Any]) -> None:
    assert parse_cql(format_cql(query), STREAMS) == query


_soup = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "SELECT",
                "FROM",
                "WHERE",
                "AND",
                "OR",
                "RANGE",
                "ROWS",
                "PARTITION",
                "BY",
                "*",
                ",",
                ".",
                "[",
                "]",
                "(",
                ")",
                ";",
                "=",
                "<>",
                "<=",
                "a",
                "b",
                "x",
                "'s'",
                '"q"',
                "1",
                "-2.5",
                "0",
                "SECONDS",
                "NULL",
            ]
        ),
        st.text(max_size=3),
    ),
    max_size=40,
).map(" ".join)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), _soup))
def test_any_text_gives_a_query_or_a_query_error(text: str) -> None:
    try:
        parse_cql(text, STREAMS)
    except QueryError as error:
        assert error.field == "cql"
