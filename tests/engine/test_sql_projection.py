"""SQL select lists (`expr AS name`, `s.*`, functions, nested paths) give the oracle's rows.

Each Hypothesis example draws a select list over three registered streams and a WHERE, runs
`streamjoin replay` in process (the envelope and the flat rows), and compares every output row with
the brute-force oracle's results projected by its own expression walk (`streamjoin.testing.
oracle_rows`, no code shared with `streamjoin.query.projection`). Records have missing fields,
nulls, wrong types and non-object paths, so NULL rules are exercised on both sides.
"""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.query import parse_query
from streamjoin.query.sql import parse_sql
from streamjoin.replay import replay
from streamjoin.testing import replay_events
from streamjoin.testing.oracle_rows import expected_rows

from .profiles import engine_settings
from .test_sql_filters import STREAMS, _number, _predicate, arrivals

_ALIASES = ["o", "p", "r"]


@st.composite
def _item(draw: st.DrawFn, position: int) -> str:
    al = draw(st.sampled_from(_ALIASES))
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return f"{al}.*"
    if kind == 1:
        return draw(st.sampled_from([f"{al}.x", f"{al}.u.v", f"{al}.s"]))  # named by default
    value = [
        draw(_number(_ALIASES)),
        f"lower({al}.s)",
        f"upper({al}.s)",
        f"coalesce({al}.x, {al}.y, 0)",
        draw(_predicate(_ALIASES)),
    ][kind - 2]
    return value if draw(st.booleans()) else f"{value} AS c{position}"


@st.composite
def select_text(draw: st.DrawFn) -> str:
    """Draw a three-way SQL join with a random select list (not only plain columns) and WHERE."""
    n = draw(st.integers(1, 5))
    items = [draw(_item(i)) for i in range(n)]
    if all(i.count(".") == 1 and " " not in i and not i.endswith("*") for i in items):
        items.append("o.k * 1.5 AS gross")  # plain columns alone are `select`, tested elsewhere
    text = (
        f"SELECT {', '.join(items)} FROM a [RANGE 4] AS o JOIN b [ROWS 3] AS p ON o.k = p.k "
        "JOIN c [RANGE 6] AS r ON p.k = r.k"
    )
    if draw(st.booleans()):
        text += " WHERE " + draw(_predicate(_ALIASES))
    return text


def _replayed(raw: dict[str, Any], lines: list[tuple[str, dict[str, Any]]], fmt: Any) -> list[dict[str, Any]]:
    out = io.StringIO()
    replay(
        parse_query(raw),
        [json.dumps({"stream": s, "record": r}) + "\n" for s, r in lines],
        out,
        output_format=fmt,
    )
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _unique_names(text: str) -> bool:
    try:
        parse_sql(text, STREAMS)
    except ValueError as exc:  # two default names alike (`o.x, o.x`): refused, as it must be
        assert "is also column" in str(exc), str(exc)
        return False
    return True


@engine_settings(120)
@given(text=select_text(), lines=arrivals())
def test_projected_rows_equal_the_oracle(text: str, lines: list[tuple[str, dict[str, Any]]]) -> None:
    if not _unique_names(text):
        return
    raw = {"name": "proj", "output": {"topic": "out"}, **parse_sql(text, STREAMS)}
    query = parse_query(raw)
    assert query.columns is not None and query.select is None, text
    want = expected_rows(query, replay_events(query, lines))
    envelope = _replayed(raw, lines, "envelope")
    assert len(envelope) == len(want)
    assert {v["id"]: v["row"] for v in envelope} == want
    assert all(set(v) == {"query", "ts", "row", "id"} for v in envelope)
    for row in _replayed(raw, lines, "flat"):
        meta = {k: row.pop(k) for k in ("query", "ts", "id")}
        assert row == want[meta["id"]], text
        assert list(row) == list(want[meta["id"]])  # the select list's order


def test_select_star_output_is_unchanged() -> None:
    """`SELECT *` has no projection: the envelope's `tuples` are the records as they arrived."""
    text = (
        "SELECT * FROM a [RANGE 4] AS o JOIN b [ROWS 3] AS p ON o.k = p.k JOIN c [RANGE 6] AS r ON p.k = r.k"
    )
    raw = {"name": "all", "output": {"topic": "out"}, **parse_sql(text, STREAMS)}
    assert "columns" not in raw and "select" not in raw
    lines = [
        ("a", {"ts": 1, "k": 1, "x": 2}),
        ("b", {"ts": 2, "k": 1}),
        ("c", {"ts": 3, "k": 1, "u": {"v": 1}}),
    ]
    (value,) = _replayed(raw, lines, "envelope")
    assert value == {
        "query": "all",
        "ts": 3,
        "tuples": {"a": lines[0][1], "b": lines[1][1], "c": lines[2][1]},
        "id": "t.a:0:0|t.b:0:0|t.c:0:0",
    }


def test_a_worked_projection() -> None:
    """Names by AS and by default, arithmetic, functions, a nested path, `s.*`, NULL and overflow."""
    text = (
        "SELECT o.k, o.x * 1.5 AS gross, lower(p.s) AS s, p.u.v, r.*, abs(o.y), o.x * 1e308 AS big "
        "FROM a [RANGE 4] AS o JOIN b [ROWS 3] AS p ON o.k = p.k JOIN c [RANGE 6] AS r ON p.k = r.k"
    )
    raw = {"name": "w", "output": {"topic": "out"}, **parse_sql(text, STREAMS)}
    lines = [
        ("a", {"ts": 1, "k": 1, "x": 2, "y": -3}),
        ("b", {"ts": 2, "k": 1, "s": "AbC", "u": {"v": [1, 2]}}),
        ("c", {"ts": 3, "k": 1, "note": "n"}),
    ]
    (value,) = _replayed(raw, lines, "envelope")
    assert value["row"] == {
        "a_k": 1,
        "gross": 3.0,
        "s": "abc",
        "b_u_v": [1, 2],
        "c_ts": 3,
        "c_k": 1,
        "c_note": "n",
        "expr_5": 3,
        "big": None,  # inf has no JSON form: NULL
    }
    (flat,) = _replayed(raw, lines, "flat")
    assert flat == {"query": "w", "ts": 3, "id": "t.a:0:0|t.b:0:0|t.c:0:0", **value["row"]}
