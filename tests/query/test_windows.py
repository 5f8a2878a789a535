"""Window models in the query definition: `within` pairs, strict range windows, expiration scopes.

Validation (an input whose records could be needed forever is refused, naming it), the tightened
pair bounds (Hammad et al.'s Fig. 11), the normalised JSON round trip, and the gate that keeps
`parse_query` (API, joiner, replay, back-fill) from handing them to an engine that cannot run them.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.query import (
    ModeDef,
    QueryError,
    RangeWindow,
    WithinPair,
    pair_bounds,
    parse_definition,
    parse_query,
)
from streamjoin.query.bounds import bounds_report, effective_window
from streamjoin.query.dump import dump_query


def _spec(
    windows: dict[str, dict[str, Any] | None], within: list[list[Any]] | None = None, **extra: Any
) -> Any:
    names = list(windows)
    inputs = [{"stream": s} | ({} if w is None else {"window": w}) for s, w in windows.items()]
    where = [[f"{a}.k", "=", f"{b}.k"] for a, b in itertools.pairwise(names)]
    spec: dict[str, Any] = {"name": "q", "inputs": inputs, "where": where, "output": {"topic": "o"}, **extra}
    if within is not None:
        spec["within"] = within
    return spec


def _fig11() -> Any:
    # Hammad et al., Fig. 11: edges A-B = w1, B-C = w2, C-D = w3, B-D = w4; A-C and A-D missing.
    w1, w2, w3, w4 = 3, 4, 5, 2
    return _spec(dict.fromkeys("ABCD"), [["A", "B", w1], ["B", "C", w2], ["C", "D", w3], ["B", "D", w4]])


def test_fig11_bounds_are_the_shortest_paths() -> None:
    q = parse_definition(_fig11())
    bounds = pair_bounds(q)
    w1, w2, w3, w4 = 3, 4, 5, 2
    assert bounds[("A", "D")] == min(w1 + w2 + w3, w1 + w4) == 5
    assert bounds[("A", "C")] == min(w1 + w2, w1 + w4 + w3) == 7
    # A given pair keeps its bound unless a path is tighter: C-D via B is 4 + 2 = 6 > 5, so it stays 5.
    assert bounds == {
        ("A", "B"): 3,
        ("A", "C"): 7,
        ("A", "D"): 5,
        ("B", "C"): 4,
        ("B", "D"): 2,
        ("C", "D"): 5,
    }
    report = {tuple(r["streams"]): r for r in bounds_report(q)}
    assert report[("A", "D")] == {"streams": ["A", "D"], "bound": 5, "given": None, "path": ["A", "B", "D"]}
    assert report[("B", "D")]["given"] == 2


def test_a_given_pair_is_tightened_by_a_shorter_path() -> None:
    q = parse_definition(_spec(dict.fromkeys("abc"), [["a", "b", 1], ["b", "c", 1], ["a", "c", 10]]))
    assert pair_bounds(q)[("a", "c")] == 2
    assert next(r for r in bounds_report(q) if r["streams"] == ["a", "c"])["given"] == 10


def test_range_windows_bound_each_other_by_the_larger_window() -> None:
    q = parse_definition(_spec({"a": {"range": 10}, "b": {"range": 30}, "c": None}, [["b", "c", 5]]))
    assert pair_bounds(q) == {("a", "b"): 30, ("a", "c"): 35, ("b", "c"): 5}
    assert effective_window(q, "c") == RangeWindow(35)
    assert effective_window(q, "a") == RangeWindow(10)


def test_rows_windows_have_no_time_bound() -> None:
    q = parse_definition(_spec({"a": {"rows": 3}, "b": {"rows": 3}}))
    assert pair_bounds(q) == {}


@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(1, 20)), min_size=4, max_size=10),
    st.lists(st.integers(-30, 30), min_size=5, max_size=5),
)
@settings(max_examples=200, deadline=None)
def test_bounds_are_sound_and_tight(edges: list[tuple[int, int, int]], ts: list[int]) -> None:
    """Every timestamp assignment meeting the given pairs meets the bounds; distances attain them."""
    names = "abcde"
    pairs: dict[frozenset[str], list[Any]] = {}
    for x, y, w in edges:
        if x != y:
            pairs.setdefault(frozenset((names[x], names[y])), [names[x], names[y], w])
    within = list(pairs.values())
    try:
        q = parse_definition(_spec(dict.fromkeys(names), within))
    except QueryError:
        return  # not connected: refused, tested elsewhere
    bounds = pair_bounds(q)
    assert len(bounds) == 10
    at = dict(zip(names, ts, strict=True))
    if all(abs(at[x] - at[y]) <= w for x, y, w in within):
        assert all(abs(at[x] - at[y]) <= b for (x, y), b in bounds.items())
    for x in names:  # tight: place every input at its distance from x
        dist = {y: 0 if y == x else bounds[(x, y) if (x, y) in bounds else (y, x)] for y in names}
        assert all(abs(dist[a] - dist[b]) <= w for a, b, w in within)


@pytest.mark.parametrize(
    ("windows", "within", "field", "words"),
    [
        # c has no window and no pair at all
        ({"a": {"range": 5}, "b": {"range": 5}, "c": None}, [], "inputs[2].window", "'c' has no window"),
        # d is bounded against c only, which is itself not connected to a and b
        (
            {"a": {"range": 5}, "b": {"range": 5}, "c": None, "d": None},
            [["c", "d", 1]],
            "inputs[2].window",
            "'c'",
        ),
        # rows windows give no time edge: c reaches a, never b
        ({"a": {"rows": 5}, "b": {"rows": 5}, "c": None}, [["a", "c", 3]], "inputs[2].window", "['b']"),
    ],
)
def test_an_unbounded_input_is_refused_by_name(
    windows: dict[str, Any], within: list[list[Any]], field: str, words: str
) -> None:
    with pytest.raises(QueryError) as err:
        parse_definition(_spec(windows, within))
    assert err.value.field == field
    assert words in err.value.message
    assert "needed forever" in err.value.message


def test_windowless_inputs_connected_through_range_windows_are_valid() -> None:
    q = parse_definition(_spec({"a": {"range": 5}, "b": {"range": 7}, "c": None}, [["a", "c", 2]]))
    assert q.inputs[2].window is None
    assert q.within == (WithinPair("a", "c", 2),)


@pytest.mark.parametrize(
    ("within", "field", "words"),
    [
        ("a", "within", "list of [stream, stream, bound]"),
        ([["a", "b"]], "within[0]", "triple"),
        ([["a", "x", 1]], "within[0][1]", "unknown input 'x'"),
        ([["a", "a", 1]], "within[0]", "against itself"),
        ([["a", "b", 0]], "within[0][2]", "> 0"),
        ([["a", "b", -1]], "within[0][2]", "> 0"),
        ([["a", "b", True]], "within[0][2]", "> 0"),
        ([["a", "b", math.inf]], "within[0][2]", "> 0"),
        ([["a", "b", 1], ["b", "a", 2]], "within[1]", "already bounded by within[0]"),
    ],
)
def test_bad_within_pairs(within: Any, field: str, words: str) -> None:
    with pytest.raises(QueryError) as err:
        parse_definition(_spec({"a": {"range": 1}, "b": {"range": 1}}, within))
    assert (err.value.field, words in err.value.message) == (field, True), err.value


@pytest.mark.parametrize(
    ("window", "field", "words"),
    [
        ({"range": 5, "strict": "yes"}, "inputs[0].window.strict", "true or false"),
        ({"rows": 5, "strict": True}, "inputs[0].window.strict", 'only a "range" window'),
    ],
)
def test_bad_strict(window: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(QueryError) as err:
        parse_definition(_spec({"a": window, "b": {"range": 1}}))
    assert err.value.field == field
    assert words in err.value.message


@pytest.mark.parametrize("mode", ["probe", "probe_insert", "probe_all"])
def test_expiration_scopes_parse_and_take_no_every(mode: str) -> None:
    q = parse_definition(_spec({"a": {"range": 1}, "b": {"range": 1}}, expiration={"mode": mode}))
    assert q.expiration == ModeDef(mode)  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="takes no other field"):
        parse_definition(_spec({"a": {"range": 1}, "b": {"range": 1}}, expiration={"mode": mode, "every": 5}))


def test_unknown_modes_list_what_is_accepted() -> None:
    with pytest.raises(QueryError) as err:
        parse_definition(_spec({"a": {"range": 1}, "b": {"range": 1}}, expiration={"mode": "sometimes"}))
    assert err.value.field == "expiration.mode"
    assert "probe_insert" in err.value.message
    with pytest.raises(QueryError) as err:  # the scopes are expiration modes only
        parse_definition(_spec({"a": {"range": 1}, "b": {"range": 1}}, evaluation={"mode": "probe"}))
    assert err.value.field == "evaluation.mode"


@pytest.mark.parametrize(
    "spec",
    [
        _fig11(),
        _spec({"a": {"range": 5, "strict": True}, "b": {"rows": 2}}, expiration={"mode": "probe_insert"}),
        _spec({"a": {"range": 5}, "b": None}, [["b", "a", 2.5]], expiration={"mode": "lazy", "every": 3}),
    ],
)
def test_dump_round_trip(spec: Any) -> None:
    q = parse_definition(spec)
    assert parse_definition(dump_query(q)) == q


def test_dump_of_a_plain_query_is_unchanged() -> None:
    dumped = dump_query(parse_query(_spec({"a": {"range": 5}, "b": {"rows": 2}})))
    assert "within" not in dumped
    assert dumped["inputs"][0]["window"] == {"range": 5}
    assert dumped["expiration"] == {"mode": "eager"}


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (_fig11(), "within"),
        (_spec({"a": {"range": 5, "strict": True}, "b": {"range": 5}}), "inputs[0].window.strict"),
        (_spec({"a": {"range": 5}, "b": {"range": 5}}, expiration={"mode": "probe"}), "expiration.mode"),
        (_spec({"a": {"range": 5}, "b": {"range": 5}}, expiration={"mode": "probe_all"}), "expiration.mode"),
    ],
)
def test_parse_query_accepts_what_the_engine_runs(spec: Any, field: str) -> None:
    assert parse_query(spec) == parse_definition(spec), field  # the engine runs every one of them
