"""The oracle on the window models: `within` pairs (Hammad et al.) and strict windows (Kostowski).

Hand-computed cases from the papers' figures (timestamps chosen to match the pictures' outcomes),
then properties on random inputs: equal range windows and the equivalent `within` pairs give the
same results; a strict window of T is an inclusive one of T - 1 on integer timestamps; every result
meets the tightened pair bounds.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.query import QueryDef, pair_bounds, parse_definition
from streamjoin.testing import Event, expected_results, replay_events

_X = 1  # the matching join value; anything else does not match


def _query(
    windows: dict[str, dict[str, Any] | None], within: list[list[Any]] | None = None, *, lateness: float = 0
) -> QueryDef:
    names = list(windows)
    inputs = [
        {"stream": s, "timestamp": "ts"} | ({} if w is None else {"window": w}) for s, w in windows.items()
    ]
    return parse_definition(
        {
            "name": "q",
            "inputs": inputs,
            "where": [[f"{a}.v", "=", f"{b}.v"] for a, b in itertools.pairwise(names)],
            "within": within or [],
            "output": {"topic": "o"},
            "lateness": lateness,
        }
    )


def _form1(names: str, w: float) -> QueryDef:
    """Hammad's Form 1: one window w for every pair, no per-input window."""
    return _query(dict.fromkeys(names), [[x, y, w] for x, y in itertools.combinations(names, 2)])


def _events(q: QueryDef, records: dict[str, list[tuple[float, int]]]) -> list[Event]:
    """Return the events of (ts, value) records per stream, arriving in timestamp order."""
    lines = sorted(((ts, s, v) for s, recs in records.items() for ts, v in recs), key=lambda t: t[0])
    return replay_events(q, [(s, {"ts": ts, "v": v}) for ts, s, v in lines])


def _as_ts(q: QueryDef, events: list[Event], results: Counter[Any]) -> set[tuple[float, ...]]:
    ts = {(e.stream, e.partition, e.offset): e.ts for e in events}
    names = q.stream_names
    assert set(results.values()) <= {1}
    return {tuple(ts[(s, p, o)] for s, (p, o) in zip(names, key, strict=True)) for key in results}


def test_h2_a_pair_exactly_w_apart_joins_and_one_just_further_does_not() -> None:
    q = _form1("ab", 10)
    events = _events(q, {"a": [(0, _X)], "b": [(10, _X)]})
    assert _as_ts(q, events, expected_results(q, events)) == {(0, 10)}
    assert expected_results(q, _events(q, {"a": [(0, _X)], "b": [(10.001, _X)]})) == Counter()
    assert expected_results(q, _events(q, {"a": [(10.001, _X)], "b": [(0, _X)]})) == Counter()


def test_h3_fig2_the_iteration_for_a2_gives_the_papers_six_results() -> None:
    q = _form1("abcde", 10)
    n = 0  # non-matching
    records = {
        "a": [(20, _X)],
        "b": [(12, n), (14, _X), (17, _X), (22, _X)],
        "c": [(15, _X), (18, n), (21, _X)],
        "d": [(5, _X), (19, _X)],
        "e": [(9, _X), (23, _X)],
    }
    events = _events(q, records)
    want = set(itertools.product([20], [14, 17, 22], [15, 21], [19], [23]))
    assert _as_ts(q, events, expected_results(q, events)) == want


def test_h4_fig3_a_record_far_from_one_streams_last_record_still_joins() -> None:
    # e(13) is more than w from b(26), yet joins a, b(14), c(22), d; c(22) arrives after b(26).
    q = _form1("abcde", 10)
    arrivals = [("a", 20), ("b", 14), ("b", 26), ("d", 19), ("e", 13), ("c", 22)]
    events = replay_events(q, [(s, {"ts": ts, "v": _X}) for s, ts in arrivals])
    assert _as_ts(q, events, expected_results(q, events)) == {(20, 14, 22, 19, 13)}


def test_h5_fig6_merge_w_join_trace_outputs() -> None:
    q = _form1("abcde", 10)
    o = 0
    records = {
        "a": [(5, o), (19, _X), (26, o + 2)],
        "b": [(8, o + 3), (21, _X), (23, _X), (27, o + 4)],
        "c": [(14, _X), (25, o + 5)],
        "d": [(2, o + 6), (18, _X), (29, o + 7)],
        "e": [(6, o + 8), (20, _X), (30, o + 9)],
    }
    events = _events(q, records)
    assert _as_ts(q, events, expected_results(q, events)) == {(19, 21, 14, 18, 20), (19, 23, 14, 18, 20)}


def test_h6_fig11_the_implied_bound_is_reached_and_not_exceeded() -> None:
    # A-B 3, B-C 4, C-D 5, B-D 2: A-D is bounded by 5 (A, B, D) although no pair states it.
    q = _query(dict.fromkeys("ABCD"), [["A", "B", 3], ["B", "C", 4], ["C", "D", 5], ["B", "D", 2]])
    at = {"A": 0, "B": 3, "C": 7, "D": 5}  # each input at its distance from A
    events = _events(q, {s: [(t, _X)] for s, t in at.items()})
    assert _as_ts(q, events, expected_results(q, events)) == {(0, 3, 7, 5)}
    assert pair_bounds(q)[("A", "D")] == 5
    for far in (at | {"D": 5.5}, at | {"C": 7.5}):  # one step past a bound: no result
        assert expected_results(q, _events(q, {s: [(t, _X)] for s, t in far.items()})) == Counter()


def test_k1_a_strict_window_excludes_its_bound() -> None:
    # T = 100; A-tuple at 195: a B-tuple at 95 does not join under Kostowski's `<`, one at 96 does;
    # Golab's inclusive window joins both.
    strict = _query({"A": {"range": 100, "strict": True}, "B": {"range": 100, "strict": True}})
    inclusive = _query({"A": {"range": 100}, "B": {"range": 100}})
    for b_ts, strict_joins in ((95, False), (96, True)):
        records = {"A": [(195, _X)], "B": [(b_ts, _X)]}
        got = expected_results(strict, _events(strict, records))
        assert bool(got) is strict_joins
        assert len(expected_results(inclusive, _events(inclusive, records))) == 1


def test_a_strict_window_on_one_input_only_binds_that_input() -> None:
    q = _query({"A": {"range": 100}, "B": {"range": 100, "strict": True}})
    assert len(expected_results(q, _events(q, {"A": [(195, _X)], "B": [(95, _X)]}))) == 0  # B is 100 older
    assert len(expected_results(q, _events(q, {"A": [(95, _X)], "B": [(195, _X)]}))) == 1  # A is, inclusive


# ---- properties on random inputs -----------------------------------------------------------------

_records = st.fixed_dictionaries(
    dict.fromkeys("abc", st.lists(st.tuples(st.integers(0, 25), st.integers(0, 1)), min_size=1, max_size=6))
)


def _random_events(q: QueryDef, records: dict[str, list[tuple[int, int]]], order: list[int]) -> list[Event]:
    lines = [(s, {"ts": ts, "v": v}) for s, recs in records.items() for ts, v in recs]
    arrival = [lines[i] for i in sorted(range(len(lines)), key=lambda i: order[i % len(order)] * 1000 + i)]
    return replay_events(q, arrival)


@settings(max_examples=150, deadline=None)
@given(_records, st.integers(1, 15), st.lists(st.integers(0, 9), min_size=1, max_size=20))
def test_equal_range_windows_equal_their_within_pairs(
    records: dict[str, list[tuple[int, int]]], t: int, order: list[int]
) -> None:
    """`ts_k - ts_j <= T` for all j, k is `|ts_x - ts_y| <= T` for every pair, and any mix of both."""
    late = 10**6  # any arrival order, nothing late: the variants may differ only by their bounds
    pairs = [[x, y, t] for x, y in itertools.combinations("abc", 2)]
    variants = [
        _query({s: {"range": t} for s in "abc"}, lateness=late),
        _query(dict.fromkeys("abc"), pairs, lateness=late),
        _query(
            {"a": {"range": t}, "b": {"range": t}, "c": None}, [["a", "c", t], ["b", "c", t]], lateness=late
        ),
        _query({s: {"range": t} for s in "abc"}, pairs, lateness=late),
    ]
    results = [expected_results(q, _random_events(q, records, order)) for q in variants]
    assert all(r == results[0] for r in results[1:])


@settings(max_examples=150, deadline=None)
@given(_records, st.integers(2, 15), st.lists(st.integers(0, 9), min_size=1, max_size=20))
def test_strict_t_is_inclusive_t_minus_1_on_integer_timestamps(
    records: dict[str, list[tuple[int, int]]], t: int, order: list[int]
) -> None:
    strict = _query({"a": {"range": t, "strict": True}, "b": {"rows": 3}, "c": {"range": t}}, lateness=10**6)
    inclusive = _query({"a": {"range": t - 1}, "b": {"rows": 3}, "c": {"range": t}}, lateness=10**6)
    got = expected_results(strict, _random_events(strict, records, order))
    assert got == expected_results(inclusive, _random_events(inclusive, records, order))


@settings(max_examples=150, deadline=None)
@given(
    _records,
    st.lists(st.tuples(st.sampled_from(["ab", "bc", "ac"]), st.integers(1, 12)), min_size=2, max_size=3),
)
def test_every_result_meets_the_tightened_bounds(
    records: dict[str, list[tuple[int, int]]], given_pairs: list[tuple[str, int]]
) -> None:
    within = [[p[0], p[1], w] for p, w in dict(given_pairs).items()]
    if len(within) < 2:
        return
    q = _query(dict.fromkeys("abc"), within, lateness=10**6)
    events = _random_events(q, records, [0])
    bounds = pair_bounds(q)
    by_key = {(e.stream, e.partition, e.offset): e.ts for e in events}
    for key in expected_results(q, events):
        ts = {s: by_key[(s, *k)] for s, k in zip(q.stream_names, key, strict=True)}
        assert all(abs(ts[x] - ts[y]) <= b for (x, y), b in bounds.items())
