"""The engine's strategy seams take new variants as a class plus one registration (docs/engine.md).

- A toy `EvictionPolicy` registered under a name is honoured: what it drops or evicts joins nothing
  from then on, leaves through the checkpoint journal's `expired`, and every result the engine still
  emits is one of the oracle's (a sub-multiset); a policy that drops chosen arriving records gives
  exactly the oracle's results without those records, under every evaluation/expiration/algorithm.
- A toy `Admission` (strict range windows, `t_max - ts < T`) registered with `register_admission`
  joins, with integer timestamps, exactly what the oracle joins with inclusive windows of `T - 1`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
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
from streamjoin.engine.eviction import EVICTION_POLICIES, EvictionPolicy, register_eviction
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


def _run(
    query: QueryDef, events: Sequence[Event], eviction: str | None
) -> tuple[Counter[ResultKey], MultiJoin, list[Entry]]:
    engine = MultiJoin(query, journal=True, eviction=eviction)
    out = []
    expired: list[Entry] = []
    for i, e in enumerate(events):
        assert engine.add(e.stream, dict(e.record), ts=e.ts, offset=e.offset)
        if i % 7 == 6:
            out += engine.advance()
            expired += engine.take_delta().expired
    out += engine.finish()
    expired += engine.take_delta().expired
    return Counter(result_key(r) for r in out), engine, expired


def _query(raw: Mapping[str, Any], combo: Combination) -> QueryDef:
    return parse_query({**raw, **combo.fields()})


class _DropOddB:
    """Drop every arriving record of input b with an odd offset (input index 1)."""

    def on_insert(self, entry: Entry, window: WindowStore) -> bool:
        return not (entry.input == 1 and entry.offset % 2 == 1)


class _KeepNewest:
    """Keep at most `cap` records in the window: evict the oldest held (maybe the arriving one)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.evicted: list[Entry] = []
        self.dropped: list[Entry] = []  # dropped on arrival

    def on_insert(self, entry: Entry, window: WindowStore) -> bool:
        while len(window) > self.cap:
            oldest = next(iter(window.scan()))
            if oldest is entry:
                self.evicted.append(entry)
                self.dropped.append(entry)
                return False
            window.evict(oldest)
            self.evicted.append(oldest)
        return True


@contextmanager
def _registered(name: str, factory: Any) -> Iterator[None]:
    register_eviction(name, factory)
    try:
        yield
    finally:
        del EVICTION_POLICIES[name]


@pytest.mark.parametrize("window", [{"range": 6}, {"rows": 3}])
def test_a_dropping_policy_gives_the_oracles_results_without_the_dropped_records(
    window: dict[str, Any],
) -> None:
    raw = _raw(window)
    events = _events(150, seed=11)
    want_all = expected_results(parse_query(raw), events)
    dropped = {(0, e.offset) for e in events if e.stream == "b" and e.offset % 2 == 1}
    want = Counter({key: n for key, n in want_all.items() if key[1] not in dropped})
    assert 0 < sum(want.values()) < sum(want_all.values())
    with _registered("drop-odd-b", lambda query, inp: _DropOddB() if inp.stream == "b" else None):
        for combo in COMBINATIONS:
            got, _, expired = _run(_query(raw, combo), events, "drop-odd-b")
            assert got == want, f"{combo}: {sum(got.values())} results, want {sum(want.values())}"
            gone = {(e.input, e.offset) for e in expired}
            assert {(1, o) for _, o in dropped} <= gone, f"{combo}: dropped records not journaled"


@pytest.mark.parametrize("window", [{"range": 8}, {"rows": 4}])
def test_a_capped_window_emits_a_sub_multiset_of_the_oracle(window: dict[str, Any]) -> None:
    raw = _raw(window)
    events = _events(200, seed=5)
    want = expected_results(parse_query(raw), events)
    policies: list[_KeepNewest] = []

    def factory(query: QueryDef, inp: InputDef) -> EvictionPolicy:
        policies.append(_KeepNewest(2))
        return policies[-1]

    with _registered("keep-newest-2", factory):
        for combo in COMBINATIONS:
            policies.clear()
            got, engine, expired = _run(_query(raw, combo), events, "keep-newest-2")
            assert not got - want, f"{combo}: results the oracle does not have"
            assert sum(got.values()) < sum(want.values()), f"{combo}: the cap changed nothing"
            evicted = {(e.input, e.offset) for p in policies for e in p.evicted}
            assert evicted and evicted <= {(e.input, e.offset) for e in expired}, combo
            members = {(i, offset) for key in got for i, (_, offset) in enumerate(key)}
            dropped = {(e.input, e.offset) for p in policies for e in p.dropped}
            assert not members & dropped, f"{combo}: a record dropped on arrival joined"
            for name, stats in engine.stats.items():
                assert stats.records <= 2, f"{combo}: window {name} holds {stats.records} > cap"
                assert stats.inserts == stats.records + stats.expirations, f"{combo}: {name} {stats}"


def test_an_unknown_eviction_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown eviction policy 'nope'"):
        MultiJoin(parse_query(_raw({"range": 5})), eviction="nope")


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
            got, _, _ = _run(_query(_raw({"range": 5}, name="strict"), combo), events, None)
            assert got == want, combo
    finally:
        ADMISSIONS.remove(_strict_rule)
