"""SQL queries with OR, arithmetic, functions, BETWEEN, IN, IS NULL and nested paths equal the oracle.

Each Hypothesis example draws a SQL text over three registered streams (aliases, JOIN ... ON, CQL
windows, a WHERE of random predicates that mention one input or several), parses it with
`parse_sql`, and runs the engine under hash and nlj, eager and lazy evaluation and expiration and
several join orders; the results must equal the brute-force oracle's, which reads the `filter` with
its own evaluator. Records have missing fields, nulls, wrong types and non-object paths, so the
three-valued rules are exercised on both sides.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.engine.edges import index_fields
from streamjoin.query import parse_query
from streamjoin.query.sql import Stream, parse_sql
from streamjoin.testing import expected_results, replay_events

from .harness import Combination, check_all, orders_for
from .profiles import engine_settings

STREAMS = {"a": Stream("t.a", "ts"), "b": Stream("t.b", "ts"), "c": Stream("t.c", "ts")}
ALIASES = {"a": "o", "b": "p", "c": "r"}
_MODES = ({"mode": "eager"}, {"mode": "lazy", "every": 3})
_COMBINATIONS = [Combination(ev, ex, alg) for ev in _MODES for ex in _MODES for alg in ("hash", "nlj")]

_WINDOW = st.one_of(
    st.builds(lambda t: f"[RANGE {t}]", st.integers(1, 8)),
    st.builds(lambda n: f"[ROWS {n}]", st.integers(1, 4)),
)
_INT = st.integers(-3, 3)


@st.composite
def _atom(draw: st.DrawFn, aliases: list[str]) -> str:
    al = draw(st.sampled_from(aliases))
    return draw(st.sampled_from([f"{al}.x", f"{al}.y", f"{al}.u.v", f"{al}.x", str(draw(_INT))]))


@st.composite
def _number(draw: st.DrawFn, aliases: list[str]) -> str:
    a, b = draw(_atom(aliases)), draw(_atom(aliases))
    return draw(
        st.sampled_from(
            [a, f"{a} + {b}", f"{a} * 1.5", f"abs({a})", f"({a} - {b})", f"{a} % 2", f"{a} / 2", f"-({a})"]
        )
    )


@st.composite
def _predicate(draw: st.DrawFn, aliases: list[str], depth: int = 0) -> str:
    al = draw(st.sampled_from(aliases))
    kind = draw(st.integers(0, 9 if depth < 2 else 6))
    if kind == 0:
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        return f"{draw(_number(aliases))} {op} {draw(_number(aliases))}"
    if kind == 1:
        lo = draw(_INT)
        return f"{draw(_number(aliases))} BETWEEN {lo} AND {lo + draw(st.integers(0, 3))}"
    if kind == 2:
        values = ", ".join(map(str, draw(st.lists(_INT, min_size=1, max_size=3))))
        return f"{draw(_number(aliases))} IN ({values})"
    if kind <= 6:
        return [
            f"{al}.x IS NULL",
            f"{al}.u.v IS NOT NULL",
            f"lower({al}.s) = 'a'",
            f"coalesce({al}.x, {al}.y) > 0",
        ][kind - 3]
    left, right = draw(_predicate(aliases, depth + 1)), draw(_predicate(aliases, depth + 1))
    return [f"({left} OR {right})", f"NOT ({left})", f"({left} AND {right})"][kind - 7]


@st.composite
def sql_text(draw: st.DrawFn) -> str:
    """Draw a three-way SQL join with random windows and a random WHERE."""
    w = [draw(_WINDOW) for _ in range(3)]
    text = f"SELECT * FROM a {w[0]} AS o JOIN b {w[1]} AS p ON o.k = p.k JOIN c {w[2]} AS r ON p.k = r.k"
    aliases = list(ALIASES.values())
    preds = draw(st.lists(_predicate(aliases), min_size=1, max_size=3))
    return text + " WHERE " + " AND ".join(preds)


_VALUE = st.one_of(_INT, _INT, st.none(), st.just("a"))
_RECORD_EXTRA = st.fixed_dictionaries(
    {},
    optional={
        "x": _VALUE,
        "y": _INT,
        "s": st.sampled_from(["A", "a", "b", 3]),
        "u": st.one_of(st.builds(lambda v: {"v": v}, _VALUE), st.just({}), st.just(5)),
    },
)


@st.composite
def arrivals(draw: st.DrawFn) -> list[tuple[str, dict[str, Any]]]:
    """Draw records of a, b, c in timestamp order (no late records), keys in 1..2."""
    out = []
    ts = 0
    for _ in range(draw(st.integers(3, 18))):
        ts += draw(st.integers(0, 2))
        record = {"ts": ts, "k": draw(st.integers(1, 2)), **draw(_RECORD_EXTRA)}
        out.append((draw(st.sampled_from(["a", "b", "c"])), record))
    return out


@engine_settings(80)
@given(text=sql_text(), lines=arrivals(), seed=st.integers(0, 2**16))
def test_sql_filters_equal_the_oracle(text: str, lines: list[tuple[str, dict[str, Any]]], seed: int) -> None:
    raw = {"name": "sql", "output": {"topic": "out"}, **parse_sql(text, STREAMS)}
    query = parse_query(raw)
    assert query.filter is not None or len(query.where) > 2, text
    # A record without one of its input's join fields is dead-lettered at ingest (`engine.ingest`):
    # neither the engine nor the oracle ever sees it.
    joined_on = index_fields(query)
    lines = [(stream, record) for stream, record in lines if all(f in record for f in joined_on[stream])]
    events = replay_events(query, lines)
    permutations = orders_for(query.stream_names, random.Random(seed))[1:]
    orders = ["auto", random.Random(seed).choice(permutations)]
    combos = [
        Combination(c.evaluation, c.expiration, c.algorithm, order) for order in orders for c in _COMBINATIONS
    ]
    check_all(raw, events, combos, focus="sql-filters", advance_after=set(range(0, len(events), 3)))


def test_a_residual_filter_changes_the_result_set() -> None:
    """The filter is applied, not ignored: the same join without it has more results."""
    head = "SELECT * FROM a [RANGE 10] AS o JOIN b [ROWS 3] AS p ON o.k = p.k"
    text = f"{head} WHERE o.x * 2 > p.x OR p.u.v IS NULL"
    raw = {"name": "sql", "output": {"topic": "out"}, **parse_sql(text, STREAMS)}
    lines = [
        ("a", {"ts": 1, "k": 1, "x": 1}),
        ("b", {"ts": 2, "k": 1, "x": 5, "u": {"v": 1}}),  # 2 > 5 false, v not null: out
        ("b", {"ts": 3, "k": 1, "x": 1, "u": {"v": 1}}),  # 2 > 1: in
        ("b", {"ts": 4, "k": 1, "x": 9}),  # u missing: in
    ]
    query = parse_query(raw)
    events = replay_events(query, lines)
    want = expected_results(query, events)
    assert sorted(want) == [((0, 0), (0, 1)), ((0, 0), (0, 2))]
    unfiltered = parse_query({k: v for k, v in raw.items() if k != "filter"})
    assert len(expected_results(unfiltered, events)) == 3
    check_all(raw, events, _COMBINATIONS, focus="sql-residual", want=want)


def test_one_input_terms_are_not_pushed_below_a_rows_window() -> None:
    """`p.x > 0` over a ROWS 1 window: a failing newer record still pushes the older one out."""
    text = "SELECT * FROM a [RANGE 10] AS o JOIN b [ROWS 1] AS p ON o.k = p.k WHERE p.x > 0 OR p.x IS NULL"
    raw = {"name": "sql", "output": {"topic": "out"}, **parse_sql(text, STREAMS)}
    lines = [
        ("b", {"ts": 1, "k": 1, "x": 1}),
        ("b", {"ts": 2, "k": 1, "x": -1}),  # fails the filter, but is the window's one row
        ("a", {"ts": 3, "k": 1}),
    ]
    query = parse_query(raw)
    events = replay_events(query, lines)
    want = expected_results(query, events)
    assert not want
    check_all(raw, events, _COMBINATIONS, focus="sql-rows", want=want)


def test_a_filter_on_a_field_the_record_lacks_is_false_even_against_itself() -> None:
    text = (
        "SELECT * FROM a [RANGE 1] AS o JOIN b [RANGE 1] AS p ON o.k = p.k JOIN c [RANGE 1] AS r"
        " ON p.k = r.k WHERE o.x = o.x"
    )
    raw = {"name": "sql", "output": {"topic": "out"}, **parse_sql(text, STREAMS)}
    lines = [("a", {"ts": 0, "k": 1}), ("b", {"ts": 0, "k": 1}), ("c", {"ts": 0, "k": 1})]
    lines += [("a", {"ts": 0, "k": 1, "x": 2})]  # one record that has it: exactly its results
    events = replay_events(parse_query(raw), lines)
    assert len(expected_results(parse_query(raw), events)) == 1
    combos = [Combination(c.evaluation, c.expiration, c.algorithm, "auto") for c in _COMBINATIONS]
    check_all(raw, events, combos, focus="sql-filters-missing")
