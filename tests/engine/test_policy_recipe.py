"""docs/engine.md's recipe for an eviction policy under a memory budget holds: a class and its registration.

A toy shedding policy is registered from this file alone: a window over its share evicts its
oldest entry (earliest timestamp, then release order), so each window keeps its newest records, a
FIFO under the budget that no built-in policy is. Policy names are declared once
(`query/grammar.py`), so the toy takes the slot of a declared name, `random`; a new name would be
that one more line. `streamjoin.replay` runs a query with `shedding` (query parsing, the planner,
the operator, the engine's shedding schedule): its results are exactly the reference simulator's
under the toy's rule, a strict sub-multiset of the oracle's, and not what another policy keeps;
the toy was asked for every victim, and each time the window held its share plus the arriving
record, never more.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from tests.shedding.simulated import simulated

from streamjoin.query import parse_query
from streamjoin.shedding import POLICIES, PolicyContext, ShedEntry
from streamjoin.testing import expected_results, replay_events

from .replayed import replayed


class EvictOldest:
    """Evict the window's oldest entry: the earliest timestamp, the first released among equals."""

    def __init__(self, context: PolicyContext) -> None:
        self.asked: list[int] = []  # how many entries each victim call chose among

    def arrive(self, entry: ShedEntry, now: float) -> None:
        """Nothing to rank: age is the entry's own."""

    def admitted(self, entry: ShedEntry) -> None:
        """Nothing to count."""

    def removed(self, entry: ShedEntry) -> None:
        """Nothing to count."""

    def victim(self, candidates: Sequence[ShedEntry], now: float) -> ShedEntry:
        """Return the oldest candidate."""
        self.asked.append(len(candidates))
        return min(candidates, key=lambda e: (e.ts, e.seq))

    def end_instant(self, now: float, produced: Mapping[int, int]) -> None:
        """Nothing to update."""


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EvictOldest]]:
    """Put the toy in the slot of `random` (restored after the test); yield the toys built from it."""
    built: list[EvictOldest] = []

    def build(context: PolicyContext) -> EvictOldest:
        built.append(EvictOldest(context))
        return built[-1]

    monkeypatch.setitem(POLICIES, "random", build)
    yield built


def _raw(window: dict[str, Any], share: int) -> dict[str, Any]:
    return {
        "name": "toy",
        "inputs": [{"stream": s, "timestamp": "t", "window": window} for s in "abc"],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": "out"},
        "shedding": {"memory": 3 * share, "policy": "random", "importance": "imp"},
    }


def _lines(seed: int, n: int = 150) -> list[tuple[str, dict[str, Any]]]:
    """Return n lines in timestamp order (ties common), 2 keys, importances that differ."""
    rnd = random.Random(seed)
    t = 0
    lines = []
    for _ in range(n):
        t += rnd.choice((0, 1, 1, 2))
        lines.append((rnd.choice("abc"), {"t": t, "k": rnd.randrange(2), "imp": rnd.choice((1, 2, 5))}))
    return lines


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("share", [1, 2])
@pytest.mark.parametrize("window", [{"range": 4}, {"rows": 4}])
def test_a_toy_policy_registered_here_runs_through_replay(
    toys: list[EvictOldest], seed: int, share: int, window: dict[str, Any]
) -> None:
    query = parse_query(_raw(window, share))
    lines = _lines(seed)
    got = replayed(query, lines)
    (toy,) = toys  # the operator built one policy, from the registered slot
    exact = expected_results(query, replay_events(query, lines))

    assert sum(got.values()) > 10  # the case joins enough to mean something
    assert not got - exact and got != exact  # only results of the query, and the budget bites
    assert got == simulated(query, lines, share)  # the toy's rule, simulated
    assert got != simulated(query, lines, share, policy="simp")  # which another rule would not keep
    assert toy.asked and set(toy.asked) == {share + 1}  # asked at each overflow, never over budget
