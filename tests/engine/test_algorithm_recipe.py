"""docs/engine.md's recipe for a join algorithm holds: a class and its registration, no engine change.

A toy algorithm is registered from this file alone: it indexes only the first equi-join attribute of
each input and probes only with that one, so every other equality is checked in the loop (neither
built-in does that). Algorithm names are declared once (`query/grammar.py`), so the toy takes the
slot of a declared name, `nlj`; a new name would be that one more line. `streamjoin.replay` runs it
(query parsing, the planner's cost model, the operator, the engine): the results are the oracle's,
and it is the toy the compiler asked.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from streamjoin.engine.algorithm import ALGORITHMS
from streamjoin.engine.edges import JoinEdge, index_fields
from streamjoin.planner.cost import CostModel
from streamjoin.planner.stats import StreamStats
from streamjoin.query import QueryDef, parse_query
from streamjoin.testing import expected_results, replay_events

from .replayed import replayed


class FirstAttributeOnly:
    """Index each input on its first equi-join attribute only; probe with it, check the rest in the loop."""

    name = "nlj"
    probes_index = True

    def __init__(self) -> None:
        self.probes: Counter[str] = Counter()

    def index_fields(self, query: QueryDef) -> dict[str, list[str]]:
        """Keep the first attribute of each input's hash indexes."""
        return {stream: fields[:1] for stream, fields in index_fields(query).items()}

    def probe_edge(self, stream: str, needed: Sequence[JoinEdge], indexed: Sequence[str]) -> JoinEdge | None:
        """Probe with the first equality on the indexed attribute, if any."""
        edge = next((e for e in needed if e.op == "=" and e.other(stream)[0] in indexed), None)
        if edge is not None:
            self.probes[stream] += 1
        return edge


_QUERY: dict[str, Any] = {
    "name": "toy",
    "inputs": [{"stream": s, "timestamp": "ts", "window": {"range": 6}} for s in ("a", "b", "c")],
    "where": [["a.k", "=", "b.k"], ["a.j", "=", "b.j"], ["b.j", "=", "c.j"], ["a.n", "<", "c.n"]],
    "output": {"topic": "out"},
    "algorithm": "nlj",
}


def _lines(seed: int, n: int = 300) -> list[tuple[str, dict[str, Any]]]:
    rnd = random.Random(seed)
    ts = 0
    lines = []
    for number in range(1, n + 1):
        ts += rnd.choice((0, 1, 1, 2))
        record = {
            "ts": ts,
            "k": rnd.randrange(3),
            "j": rnd.randrange(3),
            "n": rnd.randrange(10),
            "line": number,
        }
        lines.append((rnd.choice("abc"), record))
    return lines


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("evaluation", [{"mode": "eager"}, {"mode": "lazy", "every": 5}])
def test_a_toy_algorithm_registered_here_runs_through_replay(
    monkeypatch: pytest.MonkeyPatch, seed: int, evaluation: dict[str, Any]
) -> None:
    toy = FirstAttributeOnly()
    monkeypatch.setitem(ALGORITHMS, "nlj", toy)  # restored after the test
    query = parse_query({**_QUERY, "evaluation": evaluation})
    lines = _lines(seed)
    want = expected_results(query, replay_events(query, lines))
    assert sum(want.values()) > 20  # the case joins enough to mean something
    assert replayed(query, lines) == want
    assert set(toy.probes) == {"a", "b", "c"}  # the compiler asked the toy, for every input's step


def test_the_cost_model_asks_the_registered_algorithm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether probes choose a bucket is the algorithm's to say (`probes_index`), not a test of its name."""
    stats = {s: StreamStats(s, 10, 100, distinct=50) for s in ("a", "b", "c")}
    scanned = CostModel.build(stats, algorithm="nlj").buckets
    monkeypatch.setitem(ALGORITHMS, "nlj", FirstAttributeOnly())
    assert scanned == ((1.0,),) * 3
    assert CostModel.build(stats, algorithm="nlj").buckets == ((50.0,),) * 3
