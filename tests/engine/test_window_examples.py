"""The papers' worked examples (Hammad et al.'s W-join, Kostowski & Claypool) through the engine.

Timestamps of the Hammad examples are chosen to be consistent with the paper's figures (the paper
gives only the pictures' outcomes). Each runs under both algorithms (NLW-join, HW-join) and every
expiration mode, and is also checked against the oracle.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from streamjoin.engine import MultiJoin
from streamjoin.query import parse_query
from streamjoin.testing import Event, expected_results

MODES = ("eager", "probe", "probe_insert", "probe_all")
COMBOS = [(alg, mode) for alg in ("nlj", "hash") for mode in MODES]
X = 1  # the matching value; others are distinct


def _form1(streams: str, w: float, **fields: Any) -> dict[str, Any]:
    """Hammad's Form 1: one window `w` for every pair, no per-input window."""
    return {
        "name": "hammad",
        "inputs": [{"stream": s, "timestamp": "ts"} for s in streams],
        "where": [[f"{x}.k", "=", f"{y}.k"] for x, y in itertools.pairwise(streams)],
        "within": [[x, y, w] for x, y in itertools.combinations(streams, 2)],
        "output": {"topic": "o"},
        **fields,
    }


def _events(rows: Sequence[tuple[str, str, float, int]]) -> list[Event]:
    """Events from (stream, name, ts, value) in arrival order; `name` is kept in the record."""
    offsets: dict[str, int] = {}
    out = []
    for stream, name, ts, value in rows:
        offset = offsets[stream] = offsets.get(stream, -1) + 1
        out.append(Event(stream, 0, offset, ts, {"k": value, "ts": ts, "name": name}))
    return out


def _run(raw: dict[str, Any], events: Sequence[Event]) -> tuple[list[tuple[str, ...]], MultiJoin]:
    engine = MultiJoin(parse_query(raw))
    results = []
    for e in events:
        assert engine.add(e.stream, dict(e.record), ts=e.ts, offset=e.offset)
        results += engine.advance()
    results += engine.finish()
    return sorted(tuple(str(x.record["name"]) for x in r) for r in results), engine


FIG2 = [
    ("d", "d1", 5, X), ("e", "e1", 9, X), ("b", "b1", 12, 90), ("b", "b2", 14, X), ("c", "c1", 15, X),
    ("b", "b3", 17, X), ("c", "c2", 18, 91), ("d", "d2", 19, X), ("a", "a2", 20, X), ("c", "c3", 21, X),
    ("b", "b4", 22, X), ("e", "e2", 23, X),
]  # fmt: skip


@pytest.mark.parametrize(("algorithm", "mode"), COMBOS)
def test_hammad_fig2_the_iteration_of_a2(algorithm: str, mode: str) -> None:
    """H-3: exactly {a2} x {b2,b3,b4} x {c1,c3} x {d2} x {e2}; d1 is expired, e1 joins nothing."""
    raw = _form1("abcde", 10, algorithm=algorithm, expiration={"mode": mode})
    events = _events(FIG2)
    got, engine = _run(raw, events)
    want = sorted(("a2", b, c, "d2", "e2") for b, c in itertools.product(("b2", "b3", "b4"), ("c1", "c3")))
    assert got == want
    assert sum(expected_results(parse_query(raw), events).values()) == 6
    # d1 (5) is more than w from every record released after 15: it left its window.
    assert engine.stats["d"].expirations >= 1


@pytest.mark.parametrize(("algorithm", "mode"), COMBOS)
def test_hammad_fig3_anomaly_keeps_what_one_input_is_too_far_from(algorithm: str, mode: str) -> None:
    """H-4: e(13) is more than w from b(26), yet joins with b(14) and c(22), which arrives late."""
    rows = [
        ("e", "e", 13, X), ("b", "b14", 14, X), ("d", "d", 19, X), ("a", "a", 20, X),
        ("b", "b26", 26, X), ("c", "c22", 22, X),
    ]  # fmt: skip
    raw = _form1("abcde", 10, algorithm=algorithm, expiration={"mode": mode}, lateness=10)
    got, _ = _run(raw, _events(rows))
    assert ("a", "b14", "c22", "d", "e") in got
    assert got == sorted(
        tuple(str(e.record["name"]) for e in key_events) for key_events in _oracle_rows(raw, _events(rows))
    )


def _oracle_rows(raw: dict[str, Any], events: Sequence[Event]) -> list[tuple[Event, ...]]:
    by_key = {(e.stream, e.partition, e.offset): e for e in events}
    names = parse_query(raw).stream_names
    out = []
    for key, n in expected_results(parse_query(raw), events).items():
        row = tuple(by_key[(s, p, o)] for s, (p, o) in zip(names, key, strict=True))
        out += [row] * n
    return out


@pytest.mark.parametrize(("algorithm", "mode"), COMBOS)
def test_hammad_fig6_mw_trace_outputs(algorithm: str, mode: str) -> None:
    """H-5: the MW-join trace's outputs, {<a2,b2,c1,d2,e2>, <a2,b3,c1,d2,e2>}, and nothing else."""
    rows = [
        ("d", "d1", 2, 40), ("a", "a1", 5, 41), ("e", "e1", 6, 42), ("b", "b1", 8, 43), ("c", "c1", 14, X),
        ("d", "d2", 18, X), ("a", "a2", 19, X), ("e", "e2", 20, X), ("b", "b2", 21, X), ("b", "b3", 23, X),
        ("c", "c2", 25, 44), ("a", "a3", 26, 45), ("b", "b4", 27, 46), ("d", "d3", 29, 47),
        ("e", "e3", 30, 48),
    ]  # fmt: skip
    got, _ = _run(_form1("abcde", 10, algorithm=algorithm, expiration={"mode": mode}), _events(rows))
    assert got == [("a2", "b2", "c1", "d2", "e2"), ("a2", "b3", "c1", "d2", "e2")]


@pytest.mark.parametrize(("algorithm", "mode"), COMBOS)
def test_hammad_boundary_exactly_w_joins(algorithm: str, mode: str) -> None:
    """H-2: a pair exactly w apart joins; w + 1 apart does not."""
    rows = [("a", "a0", 0, X), ("b", "b10", 10, X), ("b", "b11", 11, X)]
    got, _ = _run(_form1("ab", 10, algorithm=algorithm, expiration={"mode": mode}), _events(rows))
    assert got == [("a0", "b10")]


@pytest.mark.parametrize(("algorithm", "mode"), COMBOS)
def test_hammad_fig11_tightened_bounds_prune_nothing_valid(algorithm: str, mode: str) -> None:
    """H-6: A-B 3, B-C 4, C-D 5, B-D 2; A-D is bounded by 5 (A-B-D), A-C by 7."""
    raw = {
        "name": "fig11",
        "inputs": [{"stream": s, "timestamp": "ts"} for s in "ABCD"],
        "where": [["A.k", "=", "B.k"], ["B.k", "=", "C.k"], ["C.k", "=", "D.k"]],
        "within": [["A", "B", 3], ["B", "C", 4], ["C", "D", 5], ["B", "D", 2]],
        "output": {"topic": "o"},
        "algorithm": algorithm,
        "expiration": {"mode": mode},
    }
    rows = [("A", "A0", 0, X), ("B", "B3", 3, X), ("D", "D5", 5, X), ("C", "C7", 7, X), ("D", "D6", 6, X)]
    rows.append(("B", "B8", 8, 99))  # joins nothing; moves time past A0's reach
    events = _events(sorted(rows, key=lambda r: r[2]))
    got, engine = _run(raw, events)
    assert got == [("A0", "B3", "C7", "D5")]  # D6 is 6 > 5 from A0
    if mode == "eager":  # A0 is out of reach (7) of every input once time passed 7
        assert engine.stats["A"].records == 0


@pytest.mark.parametrize(("algorithm", "mode"), COMBOS)
def test_kostowski_k1_strict_bound(algorithm: str, mode: str) -> None:
    """K1: T = 100; an A record at 195 does not join a B record at 95, and joins one at 96."""
    raw = {
        "name": "k1",
        "inputs": [{"stream": s, "timestamp": "ts", "window": {"range": 100, "strict": True}} for s in "ab"],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "o"},
        "algorithm": algorithm,
        "expiration": {"mode": mode},
    }
    got, _ = _run(raw, _events([("b", "b95", 95, X), ("b", "b96", 96, X), ("a", "a195", 195, X)]))
    assert got == [("a195", "b96")]
