"""A count window that sheds keeps its counts across a checkpoint: crash anywhere, restore, go on.

A count window's record shed under the budget still counts (the records it would hold never
change), so the checkpoint keeps it, stored again with `passes` 0 (`EngineDelta.rewritten`), until
it would have expired. The committed state here stands in for Redis exactly as the joiner's store
writes it (`state/redis/checkpoint_store.py`): an added entry with its header at the commit, a
released one's `seq` only, a rewritten one's header, an expired one deleted. Crashes before and
after commits; the committed output must be a sub-multiset of the oracle's, once each, and under
`simp` (whose decisions a restore re-derives exactly) the output of the run without a crash.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.engine import Entry, MultiJoin
from streamjoin.query import QueryDef
from streamjoin.query.grammar import POLICY_NAMES
from streamjoin.testing import ResultKey, expected_results, replay_events, result_key

from .test_shedding import Case, cases, query_of

Header = tuple[float, int, bool, int]  # ts, seq, passes, size: what `pack_entry` stores


class StoredState:
    """What the joiner's Redis store holds after the last commit (`CheckpointStore.commit`)."""

    def __init__(self) -> None:
        self.headers: dict[tuple[int, int], Header] = {}
        self.records: dict[tuple[int, int], str] = {}
        self.scalars: str | None = None
        self.position = 0
        self.results: list[ResultKey] = []

    def commit(self, engine: MultiJoin, results: list[Any], position: int) -> None:
        delta = engine.take_delta()
        expired_now, added_now = set(delta.expired), set(delta.added)
        for e in delta.added:
            if e not in expired_now:
                self.headers[(e.input, e.offset)] = (e.ts, e.seq, e.passes, e.size)
                self.records[(e.input, e.offset)] = json.dumps(e.record)
        for e in delta.released:
            if e not in added_now:  # the seq alone, as the store's `seq` hash
                ts, _, passes, size = self.headers[(e.input, e.offset)]
                self.headers[(e.input, e.offset)] = (ts, e.seq, passes, size)
        for e in delta.rewritten:
            if e not in added_now and e not in expired_now:
                self.headers[(e.input, e.offset)] = (e.ts, e.seq, e.passes, e.size)
        for e in delta.expired:
            if e not in added_now:
                self.headers.pop((e.input, e.offset), None)
                self.records.pop((e.input, e.offset), None)
        self.scalars = json.dumps(delta.scalars)
        self.results.extend(result_key(r) for r in results)
        self.position = position

    def recover(self, query: QueryDef) -> MultiJoin:
        engine = MultiJoin(query, journal=True)
        if self.scalars is None:
            return engine
        entries = []
        for (i, offset), (ts, seq, passes, size) in self.headers.items():
            entry = Entry(i, 0, offset, ts, json.loads(self.records[(i, offset)]), size)
            entry.seq, entry.passes = seq, passes
            entries.append(entry)
        engine.restore(entries, json.loads(self.scalars))
        return engine


def _feed(engine: MultiJoin, query: QueryDef, lines: list[tuple[str, dict[str, Any]]], start: int) -> None:
    for n in range(start, len(lines)):
        stream, record = lines[n]
        offset = sum(1 for s, _ in lines[:n] if s == stream)
        engine.add(stream, dict(record), ts=record["t"], offset=offset)


def run_with_crashes(query: QueryDef, case: Case, rng: random.Random) -> Counter[ResultKey]:
    state = StoredState()
    engine = state.recover(query)
    lines = case.lines
    while state.position < len(lines):
        end = min(len(lines), state.position + rng.randint(1, 4))
        _feed(engine, query, lines[:end], state.position)
        results = engine.advance()
        if end == len(lines):
            results += engine.finish()
        if rng.random() < 0.3:  # crash before the commit: the batch is redone
            engine = state.recover(query)
            continue
        state.commit(engine, results, end)
        if rng.random() < 0.3:  # crash after the commit
            engine = state.recover(query)
    return Counter(state.results)


def run_without_crash(query: QueryDef, case: Case) -> Counter[ResultKey]:
    engine = MultiJoin(query)
    _feed(engine, query, case.lines, 0)
    return Counter(result_key(r) for r in [*engine.advance(), *engine.finish()])


@st.composite
def count_cases(draw: st.DrawFn) -> Case:
    """Cases whose windows are all count windows (plain or per `g`), where shedding keeps places."""
    case = draw(cases(draw(st.sampled_from(["ab", "abc"]))))
    kinds = [{"rows": draw(st.integers(2, 3))}, {"rows": draw(st.integers(1, 2)), "partition_by": "g"}]
    inputs = [{**inp, "window": draw(st.sampled_from(kinds))} for inp in case.raw["inputs"]]
    return Case({**case.raw, "inputs": inputs}, case.lines, case.cuts)


@settings(max_examples=150, deadline=None)
@given(count_cases(), st.integers(1, 2), st.integers(0, 2**32 - 1))
def test_crash_and_restore_of_shedding_count_windows(case: Case, share: int, seed: int) -> None:
    n = len(case.raw["inputs"])
    for policy in POLICY_NAMES:
        query = query_of(case, policy, share * n)
        oracle = expected_results(query, replay_events(query, case.lines))
        got = run_with_crashes(query, case, random.Random(seed))
        assert not got - oracle, (policy, got - oracle)  # nothing outside the exact result, none twice
        if policy == "simp":
            assert got == run_without_crash(query, case)
