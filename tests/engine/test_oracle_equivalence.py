"""The engine's results equal the oracle's under every evaluation, expiration, algorithm and order.

One Hypothesis example is one random case (query + events without late records) and runs the
engine under every combination of issue #3: evaluation {eager, lazy 1, lazy 7, lazy 1000} x
expiration {eager, lazy 1, lazy 7} x algorithm {hash, nlj} x order {auto, every permutation for
n <= 4, three random ones for n = 5}, with `advance()` at drawn points. No duplicates, no misses.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.engine import JoinPlan

from .harness import COMBINATIONS, Combination, check_all, orders_for
from .profiles import engine_settings
from .strategies import Case, cases


def _combinations(names: tuple[str, ...], rnd: random.Random) -> list[Combination]:
    return [
        Combination(c.evaluation, c.expiration, c.algorithm, order)
        for order in orders_for(names, rnd)
        for c in COMBINATIONS
    ]


def _equivalence(n: int, examples: int) -> Callable[[], None]:
    @engine_settings(examples)
    @given(case=cases(n=n), data=st.data())
    def test(case: Case, data: st.DataObject) -> None:
        advance_after = data.draw(
            st.sets(st.integers(0, max(0, len(case.events) - 1))), label="advance_after"
        )
        rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
        check_all(
            case.raw,
            case.events,
            _combinations(case.query.stream_names, rnd),
            focus=f"equivalence-{n}",
            advance_after=advance_after,
        )

    return test


test_two_inputs_every_combination = _equivalence(2, 100)
test_three_inputs_every_combination = _equivalence(3, 50)
test_four_inputs_every_combination = _equivalence(4, 12)
test_five_inputs_every_combination = _equivalence(5, 15)


def _random_plan(names: tuple[str, ...], rnd: random.Random) -> JoinPlan:
    """Return a plan from a random global order, or with random local orders (GENERAL LAZY)."""
    if rnd.random() < 0.5:
        return JoinPlan.from_global(rnd.sample(list(names), len(names)))
    return _general_plan(names, rnd)


def _general_plan(names: tuple[str, ...], rnd: random.Random) -> JoinPlan:
    """Return a plan whose local orders are random: the origin need not be the outer loop."""
    local = {s: tuple(rnd.sample(list(names), len(names))) for s in names}
    return JoinPlan(tuple(rnd.sample(list(names), len(names))), local)


@engine_settings(60)
@given(case=cases(n=(2, 3, 4)), data=st.data())
def test_general_local_orders(case: Case, data: st.DataObject) -> None:
    """Plans whose local order puts the new records anywhere (GENERALCOMPUTEJOIN) give the same results."""
    advance_after = data.draw(st.sets(st.integers(0, max(0, len(case.events) - 1))), label="advance_after")
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    plan = _general_plan(case.query.stream_names, rnd)
    check_all(case.raw, case.events, COMBINATIONS, focus="general", advance_after=advance_after, plan=plan)


@engine_settings(60)
@given(case=cases(n=(2, 3, 4)), data=st.data())
def test_plan_changes_at_random_points(case: Case, data: st.DataObject) -> None:
    """`set_plan` with random plans between records does not change the results."""
    last = max(0, len(case.events) - 1)
    advance_after = data.draw(st.sets(st.integers(0, last)), label="advance_after")
    change_at = data.draw(st.sets(st.integers(0, last), min_size=1), label="plan changes")
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    plans = {i: _random_plan(case.query.stream_names, rnd) for i in sorted(change_at)}
    check_all(case.raw, case.events, COMBINATIONS, focus="plans", advance_after=advance_after, plans=plans)
