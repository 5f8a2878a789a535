"""W-join (`within` pairs, inputs without a window) and strict range windows equal the oracle.

Every algorithm x every evaluation mode x every expiration mode, Kostowski's invalidation scopes
(`probe`, `probe_insert`, `probe_all`) included, gives exactly the oracle's multiset: n-way W-joins,
mixes with per-input range and count windows, and strict range windows. A query written with equal
range windows and the same query written as `within` pairs give equal engine results.
"""

from __future__ import annotations

import io
import itertools
import random
from collections import Counter
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.query import parse_query
from streamjoin.replay import replay
from streamjoin.testing import Event, expected_results

from .harness import EVALUATIONS, Combination, check_all, diff, run_engine
from .profiles import engine_settings
from .strategies import Case, cases
from .test_replay_cli import _events_text, _parse_output, _replay_case

EXPIRATION_MODES: tuple[dict[str, Any], ...] = (
    {"mode": "eager"},
    {"mode": "lazy", "every": 1},
    {"mode": "lazy", "every": 7},
    {"mode": "probe"},
    {"mode": "probe_insert"},
    {"mode": "probe_all"},
)
EVERY_MODE: tuple[Combination, ...] = tuple(
    Combination(ev, ex, alg)
    for ev, ex, alg in itertools.product(EVALUATIONS, EXPIRATION_MODES, ("hash", "nlj"))
)


@st.composite
def constrained(draw: st.DrawFn, n: tuple[int, ...] = (2, 3, 4), max_partitions: int = 2) -> Case:
    """Draw a case, then drop some windows, make some range windows strict and add `within` pairs."""
    case = draw(cases(n=n, max_partitions=max_partitions))
    raw = dict(case.raw)
    names = [i["stream"] for i in raw["inputs"]]
    inputs = []
    for inp in raw["inputs"]:
        choice = draw(st.sampled_from(["keep", "strict", "none"]))
        inp = dict(inp)
        if choice == "none":
            del inp["window"]
        elif choice == "strict" and "range" in inp["window"]:
            inp["window"] = {**inp["window"], "strict": True}
        inputs.append(inp)
    raw["inputs"] = inputs
    bound = st.integers(0, 12)
    within: list[list[Any]] = []
    if draw(st.booleans()) or any("window" not in i for i in inputs):
        for i in range(1, len(names)):  # a spanning tree: every windowless input is bounded
            within.append([names[draw(st.integers(0, i - 1))], names[i], draw(bound) + 1])
        for _ in range(draw(st.integers(0, 2))):
            x, y = draw(st.lists(st.sampled_from(names), min_size=2, max_size=2, unique=True))
            if all({x, y} != {p[0], p[1]} for p in within):
                within.append([x, y, draw(bound) + 1])
    if within:
        raw["within"] = within
    return Case(raw, parse_query(raw), case.events)


def _advance(case: Case, data: st.DataObject) -> set[int]:
    return data.draw(st.sets(st.integers(0, max(0, len(case.events) - 1))), label="advance_after")


@engine_settings(25)
@given(case=constrained(), data=st.data())
def test_every_algorithm_evaluation_and_expiration_mode_equals_the_oracle(
    case: Case, data: st.DataObject
) -> None:
    check_all(case.raw, case.events, EVERY_MODE, focus="window-models", advance_after=_advance(case, data))


@engine_settings(10)
@given(case=constrained(n=(3, 4)), data=st.data())
def test_every_join_order_equals_the_oracle(case: Case, data: st.DataObject) -> None:
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    names = case.query.stream_names
    orders = [tuple(rnd.sample(list(names), len(names))) for _ in range(3)]
    combos = [
        Combination(c.evaluation, c.expiration, c.algorithm, o) for o in orders for c in EVERY_MODE[::5]
    ]
    check_all(case.raw, case.events, combos, focus="window-models-orders", advance_after=_advance(case, data))


@engine_settings(15)
@given(case=cases(n=(2, 3, 4)), w=st.integers(1, 15), data=st.data())
def test_equal_range_windows_and_within_pairs_give_equal_results(
    case: Case, w: int, data: st.DataObject
) -> None:
    """Hammad's Form 1 (one window w for every pair) = Golab's range windows `w` on every input."""
    names = case.query.stream_names
    windows = {**case.raw, "inputs": [{**i, "window": {"range": w}} for i in case.raw["inputs"]]}
    pairs = [[x, y, w] for x, y in itertools.combinations(names, 2)]
    within = {
        **case.raw,
        "inputs": [{k: v for k, v in i.items() if k != "window"} for i in case.raw["inputs"]],
    }
    within["within"] = pairs
    advance = _advance(case, data)
    for combo in EVERY_MODE[::3]:
        a = run_engine(parse_query({**windows, **combo.fields()}), case.events, advance_after=advance).results
        b = run_engine(parse_query({**within, **combo.fields()}), case.events, advance_after=advance).results
        assert a == b, combo
        assert a == expected_results(parse_query(windows), case.events)


def test_strict_excludes_the_boundary_instant() -> None:
    """Kostowski's exact test (notes B1): T = 100, u.ts = 95, k.ts = 195 joins inclusive, not strict."""

    def raw(strict: bool, mode: str) -> dict[str, Any]:
        window = {"range": 100, "strict": strict}
        return {
            "name": "k",
            "inputs": [{"stream": s, "timestamp": "ts", "window": window} for s in ("a", "b")],
            "where": [["a.k", "=", "b.k"]],
            "output": {"topic": "o"},
            "expiration": {"mode": mode},
        }

    events = [Event("a", 0, 0, 95, {"k": 1, "ts": 95}), Event("b", 0, 0, 195, {"k": 1, "ts": 195})]
    for mode in ("eager", "probe", "probe_insert", "probe_all"):
        assert sum(run_engine(parse_query(raw(False, mode)), events).results.values()) == 1
        assert run_engine(parse_query(raw(True, mode)), events).results == Counter()


@engine_settings(15)
@given(case=constrained(max_partitions=1))
def test_replay_with_its_planner_equals_the_oracle(case: Case) -> None:
    """`streamjoin replay` (the operator factory: planner, re-plans) runs W-joins and strict windows."""
    lines, events = _replay_case(case)
    want = expected_results(case.query, events)
    for combo in EVERY_MODE[::7]:
        query = parse_query({**case.raw, **combo.fields()})
        out = io.StringIO()
        replay(query, _events_text(lines).splitlines(keepends=True), out)
        keys, _ = _parse_output(out.getvalue(), query, events)
        assert keys == want, f"{combo}: {diff(want, keys, query.stream_names, events)}"
