"""Property tests on random inputs: the simulator against the oracle, every policy against the optimum.

For two inputs the optimum is exact (ODJA and the flow must agree); for three it is an upper bound
that must still dominate every policy and the feasible schedule it reports. Windows are range,
count, or count per `partition_by` value (`windows.py`), mixed in one query.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.query import QueryDef, parse_query
from streamjoin.query.grammar import COMBINE_NAMES
from streamjoin.shedding import POLICIES, ShedInstance, build_instance, make_policy, optimum, simulate
from streamjoin.shedding.simulate import Outcome
from streamjoin.testing import ResultKey, expected_results, replay_events

from .windows import most_held, windows

EPS = 1e-6
PROPERTY = settings(max_examples=150, deadline=None)


@dataclass(frozen=True)
class Case:
    query: QueryDef
    lines: list[tuple[str, dict[str, Any]]]
    instance: ShedInstance


@st.composite
def cases(draw: st.DrawFn, streams: str = "ab") -> Case:
    kinds = draw(windows(len(streams)))
    where: list[list[Any]] = [[f"{a}.k", "=", f"{b}.k"] for a, b in itertools.pairwise(streams)]
    if draw(st.booleans()):
        where.append([f"{streams[0]}.v", "<=", f"{streams[1]}.v"])
    raw = {
        "name": "p",
        "output": {"topic": "o"},
        "inputs": [{"stream": s, "timestamp": "t", "window": w} for s, w in zip(streams, kinds, strict=True)],
        "where": where,
        "shedding": {
            "memory": len(streams),
            "policy": "simp",
            "importance": "imp",
            "combine": draw(st.sampled_from(COMBINE_NAMES)),
        },
    }
    query = parse_query(raw)
    times = sorted(draw(st.lists(st.integers(0, 5), max_size=18)))
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
    events = [(n, s, float(r["t"]), r) for n, (s, r) in enumerate(lines, start=1)]
    return Case(query, lines, build_instance(query, events))


def _keys(case: Case, outcome: Outcome) -> Counter[ResultKey]:
    return Counter(tuple((0, case.instance.offsets[s]) for s in r.members) for r in outcome.results)


def _check(case: Case, share: int) -> None:
    exact = simulate(case.instance)
    assert _keys(case, exact) == expected_results(case.query, replay_events(case.query, case.lines))
    exact_keys = _keys(case, exact)
    best = optimum(case.instance, exact.results, share)
    assert best.feasible_importance <= best.importance + EPS
    assert best.importance <= exact.importance + EPS
    same_instant = Counter(
        tuple((0, case.instance.offsets[s]) for s in r.members)
        for r in exact.results
        if all(case.instance.instant_of[s] == r.instant for s in r.members)
    )
    for name in POLICIES:
        outcome = simulate(case.instance, make_policy(name, case.instance.context(seed=3)), share)
        assert not _keys(case, outcome) - exact_keys, name  # a sub-multiset of the exact result
        assert not same_instant - _keys(case, outcome), name  # records of one instant always join
        assert outcome.importance <= best.importance + EPS, name


@PROPERTY
@given(cases(), st.integers(1, 2))
def test_two_inputs_policies_within_exact_and_optimum(case: Case, share: int) -> None:
    _check(case, share)


@PROPERTY
@given(cases("abc"), st.integers(1, 2))
def test_three_inputs_policies_within_exact_and_upper_bound(case: Case, share: int) -> None:
    _check(case, share)


@PROPERTY
@given(cases(), st.integers(1, 3))
def test_odja_equals_flow_and_optimum_grows_with_memory(case: Case, share: int) -> None:
    exact = simulate(case.instance).results
    values = []
    for k in (share, share + 1, share + 2):
        dp = optimum(case.instance, exact, k, "odja")
        flow = optimum(case.instance, exact, k, "flow")
        assert dp.exact and flow.exact
        assert abs(dp.importance - flow.importance) <= EPS
        values.append(dp.importance)
    assert all(b >= a - EPS for a, b in itertools.pairwise(values))


@PROPERTY
@given(st.sampled_from(["ab", "abc"]).flatmap(cases))
def test_memory_the_windows_need_gives_the_exact_result(case: Case) -> None:
    share = most_held(case.query, case.lines)
    exact = simulate(case.instance)
    best = optimum(case.instance, exact.results, share)
    assert abs(best.importance - exact.importance) <= EPS
    assert best.results == len(exact.results)
    for name in POLICIES:
        outcome = simulate(case.instance, make_policy(name, case.instance.context()), share)
        assert outcome.shed == 0, name
        assert _keys(case, outcome) == _keys(case, exact), name
