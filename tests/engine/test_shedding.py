"""The engine under a `shedding` budget against the reference simulator and the oracle.

For every policy, on random inputs (two and three inputs, range, count and partitioned count
windows mixed, batches of any size): the engine's output equals the simulator's as a multiset, is a
sub-multiset of the oracle's, and is the oracle's when the windows fit the budget; each output
record carries the combined importance of its members.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.shedding.simulated import simulated
from tests.shedding.windows import most_held, windows

from streamjoin.engine import MultiJoin
from streamjoin.engine.output import ResultFormatter
from streamjoin.query import QueryDef, parse_query
from streamjoin.query.grammar import COMBINE_NAMES, POLICY_NAMES
from streamjoin.testing import ResultKey, expected_results, replay_events, result_key

PROPERTY = settings(max_examples=120, deadline=None)


@dataclass(frozen=True)
class Case:
    raw: dict[str, Any]
    lines: list[tuple[str, dict[str, Any]]]
    cuts: frozenset[int]  # advance the engine after these lines


def query_of(case: Case, policy: str, memory: int) -> QueryDef:
    raw = dict(case.raw, shedding=dict(case.raw["shedding"], policy=policy, memory=memory))
    return parse_query(raw)


@st.composite
def cases(draw: st.DrawFn, streams: str = "ab") -> Case:
    where: list[list[Any]] = [[f"{a}.k", "=", f"{b}.k"] for a, b in itertools.pairwise(streams)]
    if draw(st.booleans()):
        where.append([f"{streams[0]}.v", "<=", f"{streams[1]}.v"])
    raw = {
        "name": "p",
        "output": {"topic": "o"},
        "inputs": [
            {"stream": s, "timestamp": "t", "window": w}
            for s, w in zip(streams, draw(windows(len(streams))), strict=True)
        ],
        "where": where,
        "shedding": {
            "memory": len(streams),
            "policy": "simp",
            "importance": "imp",
            "combine": draw(st.sampled_from(COMBINE_NAMES)),
            "seed": draw(st.integers(0, 3)),
        },
    }
    times = sorted(draw(st.lists(st.integers(0, 6), max_size=20)))
    lines = [
        (
            draw(st.sampled_from(streams)),
            {
                "t": t,
                "k": draw(st.integers(0, 1)),
                "v": draw(st.integers(0, 3)),
                "g": draw(st.integers(0, 1)),
                "imp": draw(st.sampled_from([1, 2, 5, 20, 0.5])),
            },
        )
        for t in times
    ]
    cuts = frozenset(draw(st.sets(st.integers(0, max(len(lines) - 1, 0)))))
    return Case(raw, lines, cuts)


def run_engine(query: QueryDef, case: Case) -> tuple[Counter[ResultKey], list[dict[str, Any]]]:
    engine = MultiJoin(query)
    formatter = ResultFormatter(query)
    offsets: Counter[str] = Counter()
    results = []
    for n, (stream, record) in enumerate(case.lines):
        i, raw = query.input_index(stream), json.dumps(record, separators=(",", ":")).encode()
        piece = formatter.piece(i, 0, offsets[stream], raw, record)
        engine.add(stream, record, ts=record["t"], offset=offsets[stream], extra=piece)
        offsets[stream] += 1
        if n in case.cuts:
            results.extend(engine.advance())
    results.extend(engine.finish())
    splice = formatter.splicer()  # the joiner's and the back-fill's encoder: equal to `encode`
    assert [splice(r) for r in results] == [formatter.encode(r) for r in results]
    return Counter(result_key(r) for r in results), [json.loads(formatter.encode(r)) for r in results]


def check(case: Case, share: int) -> None:
    base = parse_query(case.raw)
    oracle = expected_results(base, replay_events(base, case.lines))
    n = len(base.inputs)
    for policy in POLICY_NAMES:
        query = query_of(case, policy, share * n)
        got, records = run_engine(query, case)
        assert got == simulated(query, case.lines, share), policy
        assert not got - oracle, policy
        for out in records:
            imps = [out["tuples"][s]["imp"] for s in query.stream_names]
            combined = {"min": min, "max": max, "sum": sum}.get(query.shedding.combine)  # type: ignore[union-attr]
            if combined is not None:
                assert out["importance"] == pytest.approx(combined(imps))
            assert out["importance"] > 0


@PROPERTY
@given(cases(), st.integers(1, 3))
def test_two_inputs_engine_equals_simulator(case: Case, share: int) -> None:
    check(case, share)


@PROPERTY
@given(cases("abc"), st.integers(1, 2))
def test_three_inputs_engine_equals_simulator(case: Case, share: int) -> None:
    check(case, share)


@PROPERTY
@given(st.sampled_from(["ab", "abc"]).flatmap(cases))
def test_enough_memory_gives_the_exact_result(case: Case) -> None:
    base = parse_query(case.raw)
    oracle = expected_results(base, replay_events(base, case.lines))
    for policy in POLICY_NAMES:
        query = query_of(case, policy, most_held(base, case.lines) * len(base.inputs))
        got, _ = run_engine(query, case)
        assert got == oracle, policy
