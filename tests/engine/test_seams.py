"""The engine's strategy seams take new variants as a class plus one registration (docs/engine.md).

A toy `Admission` (strict range windows, `t_max - ts < T`) registered with `register_admission`
joins, with integer timestamps, exactly what the oracle joins with inclusive windows of `T - 1`.
The join-algorithm seam is proven through replay by `test_algorithm_recipe.py`; eviction under a
budget is the shedding policies' seam (`tests/shedding`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

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
from streamjoin.testing import Event, ResultKey, expected_results, result_key

from .harness import COMBINATIONS, Combination

_NAMES = ("a", "b", "c")


def _raw(window: dict[str, Any], name: str = "q") -> dict[str, Any]:
    return {
        "name": name,
        "inputs": [{"stream": s, "timestamp": "ts", "window": window} for s in _NAMES],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": "o"},
    }


def _events(n: int, seed: int) -> list[Event]:
    """Return n events in timestamp order (ties common), 3 keys, across the three streams."""
    rnd = random.Random(seed)
    offsets = dict.fromkeys(_NAMES, 0)
    events = []
    ts = 0
    for _ in range(n):
        ts += rnd.choice((0, 0, 1, 2))
        s = rnd.choice(_NAMES)
        events.append(Event(s, 0, offsets[s], ts, {"ts": ts, "k": rnd.randrange(3)}))
        offsets[s] += 1
    return events


def _run(query: QueryDef, events: Sequence[Event]) -> Counter[ResultKey]:
    engine = MultiJoin(query)
    out = []
    for i, e in enumerate(events):
        assert engine.add(e.stream, dict(e.record), ts=e.ts, offset=e.offset)
        if i % 7 == 6:
            out += engine.advance()
    out += engine.finish()
    return Counter(result_key(r) for r in out)


def _query(raw: Mapping[str, Any], combo: Combination) -> QueryDef:
    return parse_query({**raw, **combo.fields()})


class _StrictRange(SlidingWindows):
    """A toy strict range window `t_max - ts < T`: the store keeps `T` (inclusive), the loops test."""

    def runtime(self, inp: InputDef, table: WindowStore, holding: Holding, filtered: bool) -> WindowRuntime:
        assert isinstance(inp.window, RangeWindow)
        range_ = inp.window.range

        def admits(u: Entry, k: Entry) -> bool:
            return u.seq < k.seq and u.passes and u.ts > k.ts - range_

        def admit(entries: Any, k: Entry, check_seq: bool) -> Sequence[Entry]:
            lo, kseq = k.ts - range_, k.seq
            return [u for u in entries if u.ts > lo and (not check_seq or u.seq < kseq)]

        return WindowRuntime(table, admit, True, admits, None)


def _strict_rule(query: QueryDef) -> Admission | None:
    return _StrictRange(query) if query.name == "strict" else None


def test_a_registered_admission_rule_is_used_by_the_compiler_and_the_loops() -> None:
    events = _events(150, seed=3)
    want = expected_results(parse_query(_raw({"range": 4})), events)  # integer ts: < 5 is <= 4
    assert want != expected_results(parse_query(_raw({"range": 5})), events)
    register_admission(_strict_rule)
    try:
        for combo in COMBINATIONS:
            got = _run(_query(_raw({"range": 5}, name="strict"), combo), events)
            assert got == want, combo
    finally:
        ADMISSIONS.remove(_strict_rule)
