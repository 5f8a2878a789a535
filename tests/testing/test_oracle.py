"""The oracle on hand-computed cases: Golab's Tables 2/3 (G1), the boundary (G2), count windows (G9)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from streamjoin.query import QueryDef, parse_query
from streamjoin.testing import Event, expected_results, late_events, replay_events, result_key, watermarks


def _query(windows: dict[str, dict[str, Any]], where: list[list[Any]], **extra: Any) -> QueryDef:
    inputs = [{"stream": s, "timestamp": "ts", "window": w} for s, w in windows.items()]
    return parse_query({"name": "q", "inputs": inputs, "where": where, "output": {"topic": "o"}, **extra})


def _golab(s1: list[int], s2: list[int], s3: list[int]) -> tuple[QueryDef, list[Event]]:
    q = _query(
        {s: {"range": 100} for s in ("S1", "S2", "S3")},
        [["S1.attr", "=", "S2.attr"], ["S2.attr", "=", "S3.attr"]],
    )
    arrivals = sorted([(ts, s) for s, tss in (("S1", s1), ("S2", s2), ("S3", s3)) for ts in tss])
    return q, replay_events(q, [(s, {"ts": ts, "attr": 1}) for ts, s in arrivals])


def _by_ts(events: list[Event], results: Counter[tuple[tuple[int, int], ...]]) -> set[tuple[float, ...]]:
    """Return each result as the timestamps of its components (streams in query order)."""
    streams = sorted({e.stream for e in events})
    ts = {(e.stream, e.partition, e.offset): e.ts for e in events}
    return {tuple(ts[(s, p, o)] for s, (p, o) in zip(streams, key, strict=True)) for key in results}


def test_golab_tables_2_and_3_only_the_two_correct_rows() -> None:
    q, events = _golab([90, 100], [150, 180], [195, 205])
    results = expected_results(q, events)
    assert _by_ts(events, results) == {(100, 150, 195), (100, 180, 195)}
    assert set(results.values()) == {1}


def test_g2_inclusive_lower_bound() -> None:
    q, events = _golab([95], [150], [195])
    assert _by_ts(events, expected_results(q, events)) == {(95, 150, 195)}
    q, events = _golab([94], [150], [195])
    assert expected_results(q, events) == Counter()


def test_equal_timestamps_across_streams_give_one_result() -> None:
    q = _query({"a": {"range": 0.5}, "b": {"range": 0.5}}, [["a.k", "=", "b.k"]])
    events = replay_events(q, [("a", {"ts": 7, "k": 1}), ("b", {"ts": 7, "k": 1})])
    assert expected_results(q, events) == Counter({((0, 0), (0, 0)): 1})


def test_g9_count_window_keeps_the_last_n_not_younger_than_t_max() -> None:
    # S1 holds cnt = ts = 1..5 with C = 2; S2's record k has ts 4.5. k joins {3, 4} (the corrected
    # COMPUTECOUNTJOIN); 5 joins k when it arrives, since k is then in S2's range window.
    q = _query({"S1": {"rows": 2}, "S2": {"range": 10}}, [["S1.attr", "=", "S2.attr"]], lateness=1)
    lines: list[tuple[str, dict[str, Any]]] = [("S1", {"ts": t, "attr": 1}) for t in (1, 2, 3, 4)]
    lines += [("S2", {"ts": 4.5, "attr": 1}), ("S1", {"ts": 5, "attr": 1})]
    want = Counter({((0, 2), (0, 0)): 1, ((0, 3), (0, 0)): 1, ((0, 4), (0, 0)): 1})
    assert expected_results(q, replay_events(q, lines)) == want
    # the same set whatever the arrival order (k last: 0.5 of disorder, within lateness 1)
    late_k = [*lines[:4], lines[5], lines[4]]
    events = replay_events(q, late_k)
    assert late_events(q, events) == []
    assert expected_results(q, events) == want


def test_rows_window_counts_per_partition() -> None:
    q = _query({"a": {"rows": 1}, "b": {"range": 100}}, [["a.k", "=", "b.k"]])
    events = [
        Event("a", 0, 0, 1, {"ts": 1, "k": 1}),
        Event("a", 1, 0, 2, {"ts": 2, "k": 1}),
        Event("a", 0, 1, 3, {"ts": 3, "k": 2}),
        Event("b", 0, 0, 4, {"ts": 4, "k": 1}),
    ]
    # partition 0's last record is (ts 3, k 2); partition 1's is (ts 2, k 1): only the latter joins.
    assert expected_results(q, events) == Counter({((1, 0), (0, 0)): 1})


def test_rows_window_partition_by() -> None:
    q = _query({"a": {"rows": 2, "partition_by": "g"}, "b": {"range": 100}}, [["a.k", "=", "b.k"]])
    lines: list[tuple[str, dict[str, Any]]] = [
        ("a", {"ts": 1, "g": "x", "k": 1}),  # offset 0: pushed out of group x by offsets 2 and 3
        ("a", {"ts": 2, "g": "y", "k": 1}),  # offset 1: alone in group y
        ("a", {"ts": 3, "g": "x", "k": 1}),  # offset 2
        ("a", {"ts": 4, "g": "x", "k": 1}),  # offset 3
        ("b", {"ts": 5, "k": 1}),
    ]
    results = expected_results(q, replay_events(q, lines))
    assert results == Counter({((0, 1), (0, 0)): 1, ((0, 2), (0, 0)): 1, ((0, 3), (0, 0)): 1})
    # Without partition_by the last two records of the partition only.
    q = _query({"a": {"rows": 2}, "b": {"range": 100}}, [["a.k", "=", "b.k"]])
    assert expected_results(q, replay_events(q, lines)) == Counter({((0, 2), (0, 0)): 1, ((0, 3), (0, 0)): 1})


def test_rows_window_tie_newer_is_larger_offset() -> None:
    q = _query({"a": {"rows": 1}, "b": {"range": 100}}, [["a.k", "=", "b.k"]])
    lines = [("a", {"ts": 3, "k": 1}), ("a", {"ts": 3, "k": 1}), ("b", {"ts": 3, "k": 1})]
    assert expected_results(q, replay_events(q, lines)) == Counter({((0, 1), (0, 0)): 1})


def test_rows_window_as_seen_at_t_max_with_disorder() -> None:
    # a's records arrive out of order (lateness 5); b at ts 4 sees a's window at t_max = 4.
    q = _query({"a": {"rows": 1}, "b": {"range": 100}}, [["a.k", "=", "b.k"]], lateness=5)
    lines = [("a", {"ts": 6, "k": 1}), ("a", {"ts": 3, "k": 1}), ("b", {"ts": 4, "k": 1})]
    events = replay_events(q, lines)
    assert late_events(q, events) == []
    # (a@3, b@4): t_max 4, a@6 is newer but later than t_max: in. (a@6, b@4): t_max 6, a@6 newest: in.
    assert expected_results(q, events) == Counter({((0, 1), (0, 0)): 1, ((0, 0), (0, 0)): 1})


def test_filter_on_rows_window_is_not_pushed_below_it() -> None:
    q = _query({"a": {"rows": 2}, "b": {"range": 100}}, [["a.k", "=", "b.k"], ["a.v", ">=", 3]])
    lines = [
        ("a", {"ts": 1, "k": 1, "v": 5}),
        ("a", {"ts": 2, "k": 1, "v": 1}),
        ("a", {"ts": 3, "k": 1, "v": 1}),
    ]
    lines.append(("b", {"ts": 3, "k": 1}))
    # a's window at 3 is {ts 2, ts 3}, both filtered out; ts 1 with v = 5 has left it.
    assert expected_results(q, replay_events(q, lines)) == Counter()


def test_theta_and_filter_predicates() -> None:
    q = _query(
        {"a": {"range": 100}, "b": {"range": 100}},
        [["a.k", "=", "b.k"], ["a.v", "<", "b.v"], [2, "<=", "b.v"]],
    )
    lines: list[tuple[str, dict[str, Any]]] = [
        ("a", {"ts": 1, "k": 1, "v": 1}),
        ("b", {"ts": 2, "k": 1, "v": 2}),  # joins a@1 (1 < 2, 2 <= 2)
        ("b", {"ts": 3, "k": 1, "v": 1}),  # fails both
        ("b", {"ts": 4, "k": 2, "v": 9}),  # another key
    ]
    assert expected_results(q, replay_events(q, lines)) == Counter({((0, 0), (0, 0)): 1})


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"ts": 1, "k": 1}, {"ts": 1, "k": 1}),  # a.v missing
        ({"ts": 1, "k": 1, "v": "text"}, {"ts": 1, "k": 1, "v": 1}),  # str vs int: incomparable
    ],
)
def test_missing_or_incomparable_field_makes_any_predicate_false(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    for op in ("!=", "<", ">="):
        q = _query({"a": {"range": 9}, "b": {"range": 9}}, [["a.k", "=", "b.k"], ["a.v", op, "b.v"]])
        if op == "!=" and "v" in a:
            continue  # "text" != 1 is simply true
        assert expected_results(q, replay_events(q, [("a", a), ("b", b)])) == Counter()


def test_watermark_and_late_events() -> None:
    q = _query({"a": {"range": 9}, "b": {"range": 9}}, [["a.k", "=", "b.k"]], lateness=2)
    events = replay_events(
        q,
        [
            ("a", {"ts": 10, "k": 1}),  # b has seen nothing: watermark -inf
            ("b", {"ts": 5, "k": 1}),  # still -inf before it arrives
            ("a", {"ts": 3, "k": 1}),  # watermark min(10, 5) - 2 = 3: not late (3 is not below 3)
            ("a", {"ts": 2, "k": 1}),  # late
            ("b", {"ts": 9, "k": 1}),
        ],
    )
    assert watermarks(q, events) == [float("-inf"), float("-inf"), 3, 3, 3]
    assert [(e.stream, e.offset) for e in late_events(q, events)] == [("a", 2)]
    results = expected_results(q, events)
    assert ((0, 2), (0, 0)) not in results  # the late record joins nothing
    assert sum(results.values()) == 4
    # a partition named up front that never sends holds the watermark at -inf: nothing is late
    assert late_events(q, events, partitions=[("a", 0), ("b", 0), ("b", 1)]) == []


def test_result_key_and_event_validation() -> None:
    class _E:
        def __init__(self, partition: int, offset: int) -> None:
            self.partition = partition
            self.offset = offset

    assert result_key([_E(0, 3), _E(1, 4)]) == ((0, 3), (1, 4))
    q = _query({"a": {"range": 9}, "b": {"range": 9}}, [["a.k", "=", "b.k"]])
    with pytest.raises(ValueError, match="not an input"):
        expected_results(q, [Event("zz", 0, 0, 1, {})])
    with pytest.raises(ValueError, match="duplicate"):
        expected_results(q, [Event("a", 0, 0, 1, {}), Event("a", 0, 0, 2, {})])


def test_watermark_never_goes_back_when_a_partition_appears() -> None:
    q = _query({"a": {"range": 9}, "b": {"range": 9}}, [["a.k", "=", "b.k"]])
    events = [
        Event("a", 0, 0, 10, {"ts": 10, "k": 1}),
        Event("b", 0, 0, 10, {"ts": 10, "k": 1}),
        Event("a", 1, 0, 6, {"ts": 6, "k": 1}),  # a new partition, behind the watermark (10): late
        Event("a", 1, 1, 8, {"ts": 8, "k": 1}),  # the watermark stays 10, not min(10, 6, 10) = 6
    ]
    assert watermarks(q, events) == [float("-inf"), float("-inf"), 10, 10]
    assert late_events(q, events) == events[2:]
    # named up front, partition a/1 holds the watermark at -inf until it sends: nothing is late
    named = [("a", 0), ("a", 1), ("b", 0)]
    assert watermarks(q, events, partitions=named) == [float("-inf")] * 3 + [6]
    assert late_events(q, events, partitions=named) == []
    with pytest.raises(ValueError, match="not in `partitions`"):
        watermarks(q, events, partitions=[("a", 0), ("b", 0)])
