"""Hand-computed cases of docs/queries.md, "The result set" and Golab's checks G1, G2 and G9, on the engine.

Each case runs under every evaluation x expiration x algorithm x join order, with `advance()` after
every record and with no `advance()` until `finish()`. The expected results are written out by hand;
tests/testing/test_oracle.py checks the oracle agrees on the same cases.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from streamjoin.query import parse_query
from streamjoin.testing import Event, ResultKey, expected_results, late_events, replay_events

from .harness import COMBINATIONS, Combination, check_all, run_engine

_LAZY_100 = {"mode": "lazy", "every": 100}


def _raw(windows: dict[str, dict[str, Any]], where: list[list[Any]], **extra: Any) -> dict[str, Any]:
    inputs = [{"stream": s, "timestamp": "ts", "window": w} for s, w in windows.items()]
    return {"name": "q", "inputs": inputs, "where": where, "output": {"topic": "o"}, **extra}


def _every_way(raw: dict[str, Any], events: list[Event], want: Counter[ResultKey]) -> None:
    """Check the engine returns exactly `want` under every combination, order and advance pattern."""
    query = parse_query(raw)
    assert expected_results(query, events) == want, "the hand-computed expectation disagrees with the oracle"
    orders: list[str | tuple[str, ...]] = ["auto", *itertools.permutations(query.stream_names)]
    combos = [
        Combination(c.evaluation, c.expiration, c.algorithm, order)
        for order in orders
        for c in [*COMBINATIONS, Combination(_LAZY_100, {"mode": "eager"}, "hash")]
    ]
    for advance_after in (range(len(events)), ()):
        check_all(raw, events, combos, focus="semantics", advance_after=advance_after, want=want)


def _golab(s1: list[int], s2: list[int], s3: list[int]) -> tuple[dict[str, Any], list[Event]]:
    raw = _raw(
        {s: {"range": 100} for s in ("S1", "S2", "S3")},
        [["S1.attr", "=", "S2.attr"], ["S2.attr", "=", "S3.attr"]],
    )
    arrivals = sorted((ts, s) for s, tss in (("S1", s1), ("S2", s2), ("S3", s3)) for ts in tss)
    return raw, replay_events(parse_query(raw), [(s, {"ts": ts, "attr": 1}) for ts, s in arrivals])


def test_g1_golab_tables_2_and_3() -> None:
    """Only (100,150,195) and (100,180,195) of the naive lazy algorithm's 8 rows are results."""
    raw, events = _golab([90, 100], [150, 180], [195, 205])
    # keys: (S1 offset, S2 offset, S3 offset); S1 100 is offset 1, S2 150/180 are 0/1, S3 195 is 0
    want: Counter[ResultKey] = Counter({((0, 1), (0, 0), (0, 0)): 1, ((0, 1), (0, 1), (0, 0)): 1})
    _every_way(raw, events, want)
    # The literal Table 3 setting: plan S1,S2,S3, lazy, the batch of new S3 tuples {195, 205} joined
    # together at NOW = 210 (end of input).
    lazy = parse_query({**raw, "evaluation": {"mode": "lazy", "every": 1000}, "order": ["S1", "S2", "S3"]})
    assert run_engine(lazy, events).results == want


def test_g2_inclusive_lower_bound() -> None:
    raw, events = _golab([95], [150], [195])
    _every_way(raw, events, Counter({((0, 0), (0, 0), (0, 0)): 1}))
    raw, events = _golab([94], [150], [195])
    _every_way(raw, events, Counter())


def test_g2_a_younger_record_is_joined_once_by_itself() -> None:
    """k joins nothing younger than itself; the younger record emits the result, once."""
    raw, events = _golab([195], [150], [100])
    _every_way(raw, events, Counter({((0, 0), (0, 0), (0, 0)): 1}))


# range 0.5 with integer timestamps: only records of the same instant are in each other's windows
@pytest.mark.parametrize("windows", [{"range": 0.5}, {"range": 5}, {"rows": 1}, {"rows": 3}])
def test_equal_timestamps_across_streams_give_no_duplicate(windows: dict[str, Any]) -> None:
    raw = _raw({"a": windows, "b": windows, "c": windows}, [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]])
    query = parse_query(raw)
    events = replay_events(
        query, [("a", {"ts": 7, "k": 1}), ("b", {"ts": 7, "k": 1}), ("c", {"ts": 7, "k": 1})]
    )
    _every_way(raw, events, Counter({((0, 0), (0, 0), (0, 0)): 1}))


def test_equal_timestamps_many_records() -> None:
    """Two records per stream, all at one timestamp: 2^3 results, each exactly once."""
    raw = _raw({s: {"range": 3} for s in "abc"}, [["a.k", "=", "b.k"], ["c.k", "=", "b.k"]])
    lines = [(s, {"ts": 4, "k": 1}) for s in "abcabc"]
    events = replay_events(parse_query(raw), lines)
    want: Counter[ResultKey] = Counter(itertools.product(((0, 0), (0, 1)), repeat=3))
    _every_way(raw, events, want)


def test_g9_count_window_boundary() -> None:
    """Rows 2 over cnt = ts = 1..5 and S2's k at 4.5: k joins cnt {3, 4}; 5 joins k on arrival."""
    raw = _raw({"S1": {"rows": 2}, "S2": {"range": 10}}, [["S1.attr", "=", "S2.attr"]], lateness=1)
    query = parse_query(raw)
    lines: list[tuple[str, dict[str, Any]]] = [("S1", {"ts": t, "attr": 1}) for t in (1, 2, 3, 4)]
    lines += [("S2", {"ts": 4.5, "attr": 1}), ("S1", {"ts": 5, "attr": 1})]
    want: Counter[ResultKey] = Counter({((0, 2), (0, 0)): 1, ((0, 3), (0, 0)): 1, ((0, 4), (0, 0)): 1})
    _every_way(raw, replay_events(query, lines), want)
    # k arriving after S1's ts 5 (0.5 of disorder, within lateness) changes nothing
    _every_way(raw, replay_events(query, [*lines[:4], lines[5], lines[4]]), want)


def test_rows_window_counts_per_partition() -> None:
    raw = _raw({"a": {"rows": 1}, "b": {"range": 100}}, [["a.k", "=", "b.k"]])
    events = [
        Event("a", 0, 0, 1, {"ts": 1, "k": 1}),
        Event("a", 1, 0, 2, {"ts": 2, "k": 1}),
        Event("a", 0, 1, 3, {"ts": 3, "k": 2}),
        Event("b", 0, 0, 4, {"ts": 4, "k": 1}),
    ]
    _every_way(raw, events, Counter({((1, 0), (0, 0)): 1}))


def test_rows_window_partition_by() -> None:
    raw = _raw({"a": {"rows": 2, "partition_by": "g"}, "b": {"range": 100}}, [["a.k", "=", "b.k"]])
    lines: list[tuple[str, dict[str, Any]]] = [
        ("a", {"ts": 1, "g": "x", "k": 1}),  # pushed out of group x by offsets 2 and 3
        ("a", {"ts": 2, "g": "y", "k": 1}),  # alone in group y
        ("a", {"ts": 3, "g": "x", "k": 1}),
        ("a", {"ts": 4, "g": "x", "k": 1}),
        ("b", {"ts": 5, "k": 1}),
    ]
    events = replay_events(parse_query(raw), lines)
    _every_way(raw, events, Counter({((0, 1), (0, 0)): 1, ((0, 2), (0, 0)): 1, ((0, 3), (0, 0)): 1}))


def test_rows_window_with_filter_keeps_filtered_records_in_the_window() -> None:
    raw = _raw({"a": {"rows": 2}, "b": {"range": 100}}, [["a.k", "=", "b.k"], ["a.v", ">=", 3]])
    lines: list[tuple[str, dict[str, Any]]] = [
        ("a", {"ts": 1, "k": 1, "v": 5}),
        ("a", {"ts": 2, "k": 1, "v": 1}),
        ("a", {"ts": 3, "k": 1, "v": 1}),
        ("b", {"ts": 3, "k": 1}),
    ]
    _every_way(raw, replay_events(parse_query(raw), lines), Counter())
    # b earlier: a's window at ts 1 holds the record with v = 5, which passes
    lines = [lines[0], ("b", {"ts": 1, "k": 1}), *lines[1:3]]
    _every_way(raw, replay_events(parse_query(raw), lines), Counter({((0, 0), (0, 0)): 1}))


def test_rows_window_tie_newer_is_larger_offset() -> None:
    raw = _raw({"a": {"rows": 1}, "b": {"range": 100}}, [["a.k", "=", "b.k"]])
    lines = [("a", {"ts": 3, "k": 1}), ("a", {"ts": 3, "k": 1}), ("b", {"ts": 3, "k": 1})]
    _every_way(raw, replay_events(parse_query(raw), lines), Counter({((0, 1), (0, 0)): 1}))


def test_theta_and_missing_fields() -> None:
    raw = _raw(
        {"a": {"range": 100}, "b": {"rows": 3}},
        [["a.k", "=", "b.k"], ["a.v", "<", "b.v"], [2, "<=", "b.v"]],
    )
    lines: list[tuple[str, dict[str, Any]]] = [
        ("a", {"ts": 1, "k": 1, "v": 1}),
        ("b", {"ts": 2, "k": 1, "v": 2}),  # joins a@1
        ("b", {"ts": 3, "k": 1, "v": 1}),  # fails both
        ("b", {"ts": 4, "k": 1}),  # no v: every predicate on it is false
        ("a", {"ts": 5, "k": 1, "v": "text"}),  # incomparable with numbers
    ]
    _every_way(raw, replay_events(parse_query(raw), lines), Counter({((0, 0), (0, 0)): 1}))


def test_late_record_is_counted_returned_false_and_not_joined() -> None:
    raw = _raw({"a": {"range": 100}, "b": {"rows": 5}}, [["a.k", "=", "b.k"]], lateness=1)
    query = parse_query(raw)
    events = replay_events(
        query,
        [
            ("a", {"ts": 10, "k": 1}),
            ("b", {"ts": 10, "k": 1}),
            ("a", {"ts": 9, "k": 1}),  # watermark 9: not late
            ("b", {"ts": 8, "k": 1}),  # late
            ("a", {"ts": 12, "k": 1}),
        ],
    )
    assert late_events(query, events) == [events[3]]
    want = expected_results(query, events)
    # b@8 (offset 1) joins nothing
    assert want == Counter({((0, 0), (0, 0)): 1, ((0, 1), (0, 0)): 1, ((0, 2), (0, 0)): 1})
    for combo in COMBINATIONS:
        q = parse_query({**raw, **combo.fields()})
        for advance_after in (range(len(events)), ()):  # lateness is judged on arrival either way
            run = run_engine(q, events, advance_after=advance_after)
            assert run.rejected == [3], combo
            assert run.engine is not None and run.engine.stats["b"].late == 1 and run.engine.late == 1, combo
            assert run.results == want, combo
