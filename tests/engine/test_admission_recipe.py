"""docs/engine.md's recipe for a window model holds: a class and its `register_admission`, no engine change.

A toy `Admission` (strict range windows, `t_max - ts < T`) is registered from this file alone for
queries named `strict`: its store keeps the inclusive `T` and its closures exclude the bound, so
with integer timestamps it joins exactly what the oracle joins with inclusive windows of `T - 1`.
It does so in the engine under every mode and algorithm, and through `streamjoin.replay` (query
parsing, the planner, the operator, the engine); each time the engine built every window's
runtime from the toy and called its closures.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from streamjoin.engine import Entry, MultiJoin, WindowStore
from streamjoin.engine.admission import (
    ADMISSIONS,
    Admission,
    Holding,
    SlidingWindows,
    WindowRuntime,
    register_admission,
)
from streamjoin.query import QueryDef, parse_query
from streamjoin.query.model import InputDef, RangeWindow
from streamjoin.testing import Event, ResultKey, expected_results, replay_events, result_key

from .harness import COMBINATIONS
from .replayed import replayed

_NAMES = ("a", "b", "c")
Lines = list[tuple[str, dict[str, Any]]]


class StrictRange(SlidingWindows):
    """A toy strict range window `t_max - ts < T`: the store keeps `T` (inclusive), the loops test."""

    def __init__(self, query: QueryDef) -> None:
        super().__init__(query)
        self.windows: list[str] = []  # the inputs whose runtime this toy built
        self.calls = 0  # calls of its admission closures

    def runtime(self, inp: InputDef, table: WindowStore, holding: Holding, filtered: bool) -> WindowRuntime:
        assert isinstance(inp.window, RangeWindow)
        range_ = inp.window.range
        self.windows.append(inp.stream)

        def admits(u: Entry, k: Entry) -> bool:
            self.calls += 1
            return u.seq < k.seq and u.passes and u.ts > k.ts - range_

        def admit(entries: Any, k: Entry, check_seq: bool) -> Sequence[Entry]:
            self.calls += 1
            lo, kseq = k.ts - range_, k.seq
            return [u for u in entries if u.ts > lo and (not check_seq or u.seq < kseq)]

        return WindowRuntime(table, admit, True, admits, None)


@pytest.fixture
def toys() -> Iterator[list[StrictRange]]:
    """Register the toy for queries named `strict`; yield the toys the engine built; unregister."""
    built: list[StrictRange] = []

    def strict_rule(query: QueryDef) -> Admission | None:
        if query.name != "strict":
            return None
        built.append(StrictRange(query))
        return built[-1]

    register_admission(strict_rule)
    yield built
    ADMISSIONS.remove(strict_rule)


def _raw(window: dict[str, Any], name: str = "q", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "inputs": [{"stream": s, "timestamp": "ts", "window": window} for s in _NAMES],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": "o"},
        **fields,
    }


def _lines(n: int, seed: int) -> Lines:
    """Return n lines in timestamp order (ties common), 3 keys, across the three streams."""
    rnd = random.Random(seed)
    lines = []
    ts = 0
    for _ in range(n):
        ts += rnd.choice((0, 0, 1, 2))
        lines.append((rnd.choice(_NAMES), {"ts": ts, "k": rnd.randrange(3)}))
    return lines


def _oracle(lines: Lines, range_: int) -> Counter[ResultKey]:
    query = parse_query(_raw({"range": range_}))
    return expected_results(query, replay_events(query, lines))


def _run(query: QueryDef, events: Sequence[Event]) -> Counter[ResultKey]:
    engine = MultiJoin(query)
    out = []
    for i, e in enumerate(events):
        assert engine.add(e.stream, dict(e.record), ts=e.ts, offset=e.offset)
        if i % 7 == 6:
            out += engine.advance()
    out += engine.finish()
    return Counter(result_key(r) for r in out)


def _used_by_the_engine(toys: Sequence[StrictRange]) -> bool:
    return {s for toy in toys for s in toy.windows} == set(_NAMES) and sum(toy.calls for toy in toys) > 0


def test_a_registered_admission_rule_is_used_by_the_compiler_and_the_loops(toys: list[StrictRange]) -> None:
    lines = _lines(150, seed=3)
    want = _oracle(lines, 4)  # integer ts: < 5 is <= 4
    assert want != _oracle(lines, 5)
    events = replay_events(parse_query(_raw({"range": 5})), lines)
    for combo in COMBINATIONS:
        toys.clear()
        got = _run(parse_query(_raw({"range": 5}, name="strict", **combo.fields())), events)
        assert got == want, combo
        assert _used_by_the_engine(toys), combo


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("algorithm", ["hash", "nlj"])
@pytest.mark.parametrize("evaluation", [{"mode": "eager"}, {"mode": "lazy", "every": 5}])
def test_a_toy_admission_registered_here_runs_through_replay(
    toys: list[StrictRange], seed: int, algorithm: str, evaluation: dict[str, Any]
) -> None:
    lines = _lines(150, seed)
    want = _oracle(lines, 4)
    assert sum(want.values()) > 20 and want != _oracle(lines, 5)  # the bound instant matters here
    query = parse_query(_raw({"range": 5}, name="strict", algorithm=algorithm, evaluation=evaluation))
    assert replayed(query, lines) == want
    assert _used_by_the_engine(toys)
