"""CQL for the window models: `WITHIN (x, y) w` pairs, inputs without a window, `[RANGE T STRICT]`."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.query import QueryError, WithinPair, pair_bounds, parse_definition
from streamjoin.query.cql import CqlError, Stream, format_cql, parse_cql

STREAMS = {s: Stream(f"t.{s}", "ts") for s in ("A", "B", "C", "D")} | {"within": Stream("kw", "ts")}


def test_hammad_fig11_in_cql() -> None:
    text = (
        "SELECT * FROM A, B, C, D WITHIN (A, B) 3, (B, C) 4, (C, D) 5, (B, D) 2 "
        "WHERE A.id = B.id AND B.id = C.id AND C.id = D.id"
    )
    got = parse_cql(text, STREAMS)
    assert got["within"] == [["A", "B", 3], ["B", "C", 4], ["C", "D", 5], ["B", "D", 2]]
    assert all("window" not in i for i in got["inputs"])
    q = parse_definition({**got, "name": "fig11", "output": {"topic": "o"}})
    assert q.within[3] == WithinPair("B", "D", 2)
    assert pair_bounds(q)[("A", "D")] == 5
    assert format_cql(got) == text


def test_strict_windows_units_and_mixed_inputs() -> None:
    text = "select * from A [range 2 seconds strict], B [ROWS 3], C within (c, a) 1.5 minutes where A.k = B.k"
    with pytest.raises(CqlError, match="'c' is not in FROM"):  # identifiers are case-sensitive
        parse_cql(text, STREAMS)
    got = parse_cql(text.replace("(c, a)", "(C, A)"), STREAMS)
    assert got["inputs"] == [
        {"stream": "A", "topic": "t.A", "timestamp": "ts", "window": {"range": 2000, "strict": True}},
        {"stream": "B", "topic": "t.B", "timestamp": "ts", "window": {"rows": 3}},
        {"stream": "C", "topic": "t.C", "timestamp": "ts"},
    ]
    assert got["within"] == [["C", "A", 90_000]]
    assert format_cql(got) == (
        "SELECT * FROM A [RANGE 2000 STRICT], B [ROWS 3], C WITHIN (C, A) 90000 WHERE A.k = B.k"
    )


def test_keywords_within_and_strict_are_quoted() -> None:
    got = parse_cql('SELECT * FROM "within" [RANGE 1], A WITHIN ("within", A) 1', STREAMS)
    assert got["within"] == [["within", "A", 1]]
    assert format_cql(got) == 'SELECT * FROM "within" [RANGE 1], A WITHIN ("within", A) 1'


def test_an_unbounded_input_written_in_cql_is_refused_by_the_query_check() -> None:
    got = parse_cql("SELECT * FROM A [RANGE 5], B [RANGE 5], C WHERE A.k = B.k AND B.k = C.k", STREAMS)
    with pytest.raises(QueryError) as err:
        parse_definition({**got, "name": "q", "output": {"topic": "o"}})
    assert err.value.field == "inputs[2].window"
    assert "'C' has no window" in err.value.message


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ("SELECT * FROM A, B WITHIN A, B 5", 26, "expected '('"),
        ("SELECT * FROM A, B WITHIN (A, X) 5", 30, "'X' is not in FROM"),
        ("SELECT * FROM A, B WITHIN (A B) 5", 29, "expected ','"),
        ("SELECT * FROM A, B WITHIN (A, B)", 32, "expected a WITHIN bound"),
        ("SELECT * FROM A, B WITHIN (A, B) 0", 33, "a WITHIN bound must be > 0"),
        ("SELECT * FROM A, B WITHIN (A, A) 1", 26, "against itself"),
        ("SELECT * FROM A, B WITHIN (A, B) 1, (B, A) 2", 36, "appears twice"),
        ("SELECT * FROM A, B WITHIN (A, B) 1 (B, C) 2", 35, "unexpected '('"),
        ("SELECT * FROM A [ROWS 2 STRICT], B", 24, "expected ']'"),
        ("SELECT * FROM A [STRICT RANGE 2], B", 17, "expected RANGE, ROWS or PARTITION BY"),
        ("SELECT * FROM A WHERE A.k = 1 WITHIN (A, B) 1", 30, "unexpected 'WITHIN'"),
    ],
)
def test_errors_name_the_position(text: str, position: int, words: str) -> None:
    with pytest.raises(CqlError) as caught:
        parse_cql(text, STREAMS)
    assert caught.value.position == position, caught.value.message
    assert words in caught.value.message


_bounds = st.one_of(st.integers(1, 10**9), st.floats(1e-3, 1e9, allow_nan=False))
_windows = st.one_of(
    st.none(),
    st.builds(lambda n, s: {"range": n, "strict": True} if s else {"range": n}, _bounds, st.booleans()),
    st.builds(lambda n: {"rows": n}, st.integers(1, 99)),
)


@st.composite
def _queries(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(sorted(STREAMS)), min_size=2, max_size=5, unique=True))
    inputs = []
    for n in names:
        item: dict[str, Any] = {"stream": n, "topic": STREAMS[n].topic, "timestamp": "ts"}
        window = draw(_windows)
        if window is not None:
            item["window"] = window
        inputs.append(item)
    pairs = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=6))
    within: list[list[Any]] = []
    for x, y in pairs:
        if x != y and all({x, y} != {p[0], p[1]} for p in within):
            within.append([x, y, draw(_bounds)])
    query: dict[str, Any] = {"inputs": inputs, "where": [[f"{names[0]}.k", "=", f"{names[1]}.k"]]}
    if within:
        query["within"] = within
    return query


@settings(max_examples=300, deadline=None)
@given(_queries())
def test_format_then_parse_is_the_identity(query: dict[str, Any]) -> None:
    assert parse_cql(format_cql(query), STREAMS) == query
