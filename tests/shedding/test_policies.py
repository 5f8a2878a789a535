"""Each policy's decisions, the n-input match estimate, the registry, and the per-instant order."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from streamjoin.query import parse_query
from streamjoin.query.grammar import POLICY_NAMES
from streamjoin.shedding import (
    POLICIES,
    EntryFactory,
    PolicyContext,
    SheddingPolicy,
    ShedEntry,
    WindowShedder,
    build_instance,
    evaluate,
    make_policy,
    register_policy,
)
from streamjoin.shedding.policies import SimpPolicy
from streamjoin.shedding.stats import MatchCounts

TWO = PolicyContext(2, ((1,), (0,)), (3.0, 3.0), seed=7)


def _e(window: int, seq: int, ts: float, imp: float, key: Hashable, other: int | None = None) -> ShedEntry:
    return ShedEntry(window, seq, ts, imp, ((1 - window if other is None else other, (key,)),))


def _hold(policy: SheddingPolicy, *entries: ShedEntry, now: float = 0) -> None:
    for e in entries:
        policy.arrive(e, now)
        policy.admitted(e)


def test_the_registry_holds_exactly_the_policies_a_query_may_name() -> None:
    assert tuple(POLICIES) == POLICY_NAMES
    with pytest.raises(KeyError, match="unknown shedding policy 'nope'"):
        make_policy("nope", TWO)
    with pytest.raises(ValueError, match="registered twice"):
        register_policy("simp")(SimpPolicy)


def test_simp_drops_the_least_important_the_oldest_among_equals_even_the_arriving_one() -> None:
    policy = make_policy("simp", TWO)
    old, older, new = _e(0, 2, 1, 5, 1), _e(0, 1, 0, 5, 1), _e(0, 3, 2, 5, 1)
    _hold(policy, older, old, new)
    assert policy.victim([older, old, new], 2) == older
    low = _e(0, 4, 3, 1, 1)
    _hold(policy, low)
    assert policy.victim([old, new, low], 3) == low


def test_frequency_and_simpprob_rank_by_matches_in_the_other_window_at_arrival() -> None:
    for name in ("frequency", "simpprob"):
        policy = make_policy(name, TWO)
        _hold(policy, _e(1, 1, 0, 1, "x"), _e(1, 2, 0, 1, "x"), _e(1, 3, 0, 1, "y"))
        a, b = _e(0, 4, 1, 2, "x"), _e(0, 5, 1, 2, "y")
        _hold(policy, a, b, now=1)
        assert policy.victim([a, b], 1) == b, name  # 2 matches beat 1
    # SIMPPROB weighs importance: 1 match of importance 9 beats 2 matches of importance 2.
    policy = make_policy("simpprob", TWO)
    _hold(policy, _e(1, 1, 0, 1, "x"), _e(1, 2, 0, 1, "x"), _e(1, 3, 0, 1, "y"))
    a, b = _e(0, 4, 1, 2, "x"), _e(0, 5, 1, 9, "y")
    _hold(policy, a, b, now=1)
    assert policy.victim([a, b], 1) == a


def test_dimpprob_recounts_after_each_instant_simpprob_does_not() -> None:
    # a and b tie on arrival (one match each), so the older, a, would go; then b's only partner
    # leaves: SIMPPROB keeps its arrival ranks, DIMPPROB re-counts and turns against b.
    decided = {}
    for name in ("simpprob", "dimpprob"):
        policy = make_policy(name, TWO)
        partner = _e(1, 2, 0, 1, "y")
        _hold(policy, _e(1, 1, 0, 1, "x"), partner)
        a, b = _e(0, 3, 1, 1, "x"), _e(0, 4, 1, 1, "y")
        _hold(policy, a, b, now=1)
        policy.end_instant(1, {})
        policy.removed(partner)
        policy.end_instant(2, {})
        decided[name] = policy.victim([a, b], 2).seq
    assert decided == {"simpprob": 3, "dimpprob": 4}


def test_dgl_raises_entries_that_join_and_decays_the_others() -> None:
    policy = make_policy("dgl", TWO)
    _hold(policy, _e(1, 1, 0, 1, "x"))
    a, b = _e(0, 2, 0, 1, "x"), _e(0, 3, 0, 1, "y")
    _hold(policy, a, b)
    policy.end_instant(0, {})  # both arrived now: untouched
    assert policy.victim([a, b], 0) == a  # equal priority: the older (lower seq) goes
    policy.end_instant(1, {2: 1})  # a took part in a result, b did not
    assert policy.victim([a, b], 1) == b


def test_random_is_uniform_and_reproducible_with_its_seed() -> None:
    entries = [_e(0, i, i, 1, "x") for i in range(5)]

    def draws(seed: int) -> list[int]:
        policy = make_policy("random", PolicyContext(2, ((1,), (0,)), seed=seed))
        return [policy.victim(entries, 0).seq for _ in range(200)]

    assert draws(1) == draws(1) != draws(2)
    assert set(draws(1)) == {0, 1, 2, 3, 4}


def test_n_inputs_match_estimate_is_the_product_over_the_windows_joined() -> None:
    q = parse_query(
        {
            "name": "star",
            "output": {"topic": "o"},
            "inputs": [{"stream": s, "timestamp": "t", "window": {"range": 5}} for s in "abc"],
            "where": [["a.k", "=", "b.k"], ["c.j", "=", "a.k"]],
        }
    )
    make = EntryFactory(q)
    assert make.neighbours == ((1, 2), (0,), (0,))
    counts = MatchCounts()
    for seq, (window, record) in enumerate(
        [(1, {"k": 1}), (1, {"k": 1}), (2, {"j": 1}), (2, {"j": 1}), (2, {"j": 1}), (1, {"k": 2})]
    ):
        counts.add(make.entry(window, seq=seq, ts=0, record={"t": 0, **record}))
    assert counts.matches(make.entry(0, seq=9, ts=1, record={"t": 1, "k": 1})) == 2 * 3
    assert counts.matches(make.entry(0, seq=9, ts=1, record={"t": 1, "k": 2})) == 0  # no c partner
    assert counts.matches(make.entry(2, seq=9, ts=1, record={"t": 1, "j": 2})) == 0
    assert counts.matches(make.entry(1, seq=9, ts=1, record={"t": 1, "k": 1})) == 0  # no a yet
    # a three-way star through a policy: a record that joins both other windows is kept
    policy = make_policy("simpprob", PolicyContext(3, make.neighbours))
    for seq, (window, record) in enumerate([(1, {"k": 1}), (2, {"j": 1}), (1, {"k": 2})]):
        _hold(policy, make.entry(window, seq=seq, ts=0, record={"t": 0, **record}))
    both = make.entry(0, seq=5, ts=1, record={"t": 1, "k": 1})
    one = make.entry(0, seq=6, ts=1, record={"t": 1, "k": 2})
    _hold(policy, both, one, now=1)
    assert policy.victim([both, one], 1) == one


def test_a_record_evicted_at_an_instant_does_not_join_that_instant() -> None:
    # r0 is displaced by r1 at t=1; s1 (which only r0 matches) arrives at t=1. Probing before
    # evicting would give SIMP 1 + 5 = 6, more than the optimum 5 with one record per window.
    q = parse_query(
        {
            "name": "order",
            "output": {"topic": "o"},
            "inputs": [{"stream": s, "timestamp": "t", "window": {"range": 3}} for s in "rs"],
            "where": [["r.k", "=", "s.k"]],
            "shedding": {"memory": 2, "policy": "simp", "importance": "imp"},
        }
    )
    events = [
        (1, "r", 0.0, {"t": 0, "k": 1, "imp": 1}),
        (2, "r", 1.0, {"t": 1, "k": 2, "imp": 5}),
        (3, "s", 1.0, {"t": 1, "k": 1, "imp": 1}),
        (4, "s", 2.0, {"t": 2, "k": 2, "imp": 5}),
    ]
    report = evaluate(build_instance(q, events), 2)
    assert report["exact"] == {"results": 2, "importance": 6}
    assert report["optimum"]["importance"] == 5
    simp = next(p for p in report["policies"] if p["policy"] == "simp")
    assert simp == {"policy": "simp", "results": 1, "importance": 5}


def test_window_shedder_applies_a_share_changed_at_runtime_at_the_next_insert() -> None:
    shedder = WindowShedder(make_policy("simp", TWO), share=3)
    held = [_e(0, seq, seq, imp, "x") for seq, imp in enumerate((4, 1, 3))]
    for e in held:
        shedder.arrive(e, e.ts)
        assert shedder.admit(e, held[: e.seq + 1], e.ts) == []
    shedder.share = 1  # a smaller budget: the excess goes at the window's next insert
    new = _e(0, 3, 3, 2, "x")
    shedder.arrive(new, 3)
    victims = shedder.admit(new, [*held, new], 3)
    assert [v.seq for v in victims] == [1, 3, 2]  # importance 1, 2, 3 go; 4 stays
    with pytest.raises(ValueError, match="at least 1"):
        shedder.share = 0
