"""Checkpoints: a crash at any batch boundary, then `restore`, loses and repeats nothing.

This is the engine half of the joiner's exactly-once protocol: each batch's delta, results and
input position are "committed" together into a plain dict standing in for Redis; a crash discards
the engine and everything uncommitted, and a fresh engine restored from the committed state goes on
from the committed position. The committed results must equal the oracle's, whatever the modes.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.engine import Entry, MultiJoin
from streamjoin.engine.checkpoint import IncompleteCheckpointError
from streamjoin.query import QueryDef, parse_query
from streamjoin.testing import expected_results, result_key

from .profiles import engine_settings
from .strategies import Case, cases, with_modes

EntryKey = tuple[int, int, int]
Persisted = tuple[float, int, str, bool, int]

MODES: list[dict[str, Any]] = [
    {"evaluation": {"mode": "eager"}, "expiration": {"mode": "eager"}},
    {"evaluation": {"mode": "eager"}, "expiration": {"mode": "lazy", "every": 3}},
    {"evaluation": {"mode": "lazy", "every": 2}, "expiration": {"mode": "eager"}},
    {"evaluation": {"mode": "lazy", "every": 5}, "expiration": {"mode": "lazy", "every": 4}},
]


class CommittedState:
    """What a store would hold after the last successful commit (JSON round-tripped, like Redis)."""

    def __init__(self) -> None:
        self.entries: dict[EntryKey, Persisted] = {}
        self.scalars: str | None = None
        self.position = 0
        self.results: list[Any] = []

    def commit(self, engine: MultiJoin, results: list[Any], position: int) -> None:
        delta = engine.take_delta()
        for e in [*delta.added, *delta.released]:
            self.entries[(e.input, e.partition, e.offset)] = (
                e.ts,
                e.seq,
                json.dumps(e.record),
                e.passes,
                e.size,
            )
        for e in delta.expired:
            self.entries.pop((e.input, e.partition, e.offset), None)
        self.scalars = json.dumps(delta.scalars)
        self.results.extend(result_key(r) for r in results)
        self.position = position

    def recover(self, query: QueryDef, partitions: dict[str, list[int]]) -> MultiJoin:
        engine = MultiJoin(query, partitions=partitions, journal=True)
        if self.scalars is None:
            return engine
        entries = []
        for (i, p, offset), (ts, seq, record, passes, size) in self.entries.items():
            entry = Entry(i, p, offset, ts, json.loads(record), size)
            entry.seq, entry.passes = seq, passes
            entries.append(entry)
        engine.restore(entries, json.loads(self.scalars))
        return engine


def run_with_crashes(
    case: Case, query: QueryDef, rng: random.Random, switch_to: list[QueryDef] | None = None
) -> Counter[Any]:
    """Run `case` with crashes before and after commits; each recovery may switch the query's modes.

    `switch_to`: the definitions a recovery picks from (a control change restarts the operator from
    its checkpoint with the new evaluation and expiration modes); by default `query` throughout.
    """
    partitions: dict[str, list[int]] = {
        s: sorted({e.partition for e in case.events} | {0}) for s in query.stream_names
    }
    state = CommittedState()
    choices = switch_to or [query]
    engine = state.recover(query, partitions)
    events = case.events
    crashes = 0
    while state.position < len(events):
        end = min(len(events), state.position + rng.randint(1, 4))
        for e in events[state.position : end]:
            engine.add(e.stream, dict(e.record), ts=e.ts, partition=e.partition, offset=e.offset)
        results = engine.advance()
        if end == len(events):
            results += engine.finish()
        if rng.random() < 0.25 and crashes < 20:  # crash before the commit: the batch is redone
            crashes += 1
            engine = state.recover(rng.choice(choices), partitions)
            continue
        state.commit(engine, results, end)
        if rng.random() < 0.25:  # crash after the commit
            engine = state.recover(rng.choice(choices), partitions)
    return Counter(state.results)


@engine_settings(examples=60)
@given(case=cases(n=(2, 3, 4)), mode=st.sampled_from(MODES), seed=st.integers(0, 2**32 - 1))
def test_crash_and_restore_equals_oracle(case: Case, mode: dict[str, Any], seed: int) -> None:
    query = with_modes(case.raw, **mode)
    partitions = {
        (s, p) for s in query.stream_names for p in sorted({e.partition for e in case.events} | {0})
    }
    expected = expected_results(query, case.events, partitions=partitions)
    got = run_with_crashes(case, query, random.Random(seed))
    assert got == expected, (
        f"missing {expected - got}, extra or duplicated {got - expected}\n{case.describe()}"
    )


@engine_settings(examples=60)
@given(case=cases(n=(2, 3, 4)), seed=st.integers(0, 2**32 - 1))
def test_mode_switches_at_restore_keep_the_result_set(case: Case, seed: int) -> None:
    """Eager <-> lazy switches (a PATCH restarts the operator from its checkpoint): none lost or doubled."""
    queries = [with_modes(case.raw, **mode) for mode in MODES]
    partitions = {
        (s, p) for s in queries[0].stream_names for p in sorted({e.partition for e in case.events} | {0})
    }
    expected = expected_results(queries[0], case.events, partitions=partitions)
    got = run_with_crashes(case, queries[0], random.Random(seed), switch_to=queries)
    assert got == expected, (
        f"missing {expected - got}, extra or duplicated {got - expected}\n{case.describe()}"
    )


def test_take_delta_needs_journal() -> None:
    raw = {
        "name": "q",
        "inputs": [
            {"stream": "a", "topic": "a", "timestamp": "ts", "window": {"range": 5}},
            {"stream": "b", "topic": "b", "timestamp": "ts", "window": {"range": 5}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "o"},
    }
    engine = MultiJoin(parse_query(raw))
    try:
        engine.take_delta()
    except RuntimeError as exc:
        assert "journal" in str(exc)
    else:
        raise AssertionError("take_delta without a journal must fail")


def _two_way(evaluation: dict[str, Any]) -> QueryDef:
    inputs = [{"stream": s, "timestamp": "ts", "window": {"range": 10_000}} for s in "ab"]
    return parse_query(
        {"name": "q", "inputs": inputs, "where": [["a.k", "=", "b.k"]], "output": {"topic": "o"},
         "evaluation": evaluation}
    )  # fmt: skip


def _feed(engine: MultiJoin, ts: float, offset: int) -> list[Any]:
    """Add a matching a/b pair at `ts` and a watermark-moving pair just after; return what advances."""
    engine.add("a", {"k": offset}, ts=ts, offset=offset)
    engine.add("b", {"k": offset}, ts=ts + 1, offset=offset)
    engine.add("a", {"k": f"alone-a{offset}"}, ts=ts + 2, offset=offset + 1)
    engine.add("b", {"k": f"alone-b{offset}"}, ts=ts + 3, offset=offset + 1)
    return engine.advance()


def test_lazy_evaluation_waits_for_a_multiple_of_every_after_a_switch_from_eager() -> None:
    """docs/queries.md: lazy joins "each time the watermark crosses a multiple of tau". The checkpoint of
    an eager engine carries no lazy epoch; the lazy engine restored from it (a control change) must
    still hold its first batch until the watermark crosses the next multiple, not join it at once."""
    state = CommittedState()
    eager = MultiJoin(_two_way({"mode": "eager"}), journal=True)
    first = _feed(eager, 1_000, 0)
    assert len(first) == 1
    state.commit(eager, first, 0)

    lazy = state.recover(_two_way({"mode": "lazy", "every": 100_000}), {"a": [0], "b": [0]})
    assert _feed(lazy, 2_000, 10) == []  # the watermark (2,002) crossed no multiple of 100,000
    lazy.add("a", {"k": 99}, ts=100_005, offset=20)
    lazy.add("b", {"k": 98}, ts=100_006, offset=20)
    assert len(lazy.advance()) == 1  # it crossed 100,000: the held pair is joined now


def test_a_new_lazy_engine_joins_its_first_release() -> None:
    """The watermark of a new engine rose from -infinity, across every multiple: its first release is
    joined (the joiner has no end of input that would join it later)."""
    lazy = MultiJoin(_two_way({"mode": "lazy", "every": 100_000}))
    assert len(_feed(lazy, 2_000, 10)) == 1


@pytest.mark.parametrize("lost", [["next_seq"], ["next_seq", "watermark", "max_ts"], "all"])
def test_restore_from_scalars_without_next_seq_is_a_clear_error_that_changes_nothing(
    lost: list[str] | str,
) -> None:
    """A store that lost the scalars (or stored `{}`) must not restore an engine, nor fail with a
    `KeyError`: the error names what is missing, and the engine is untouched (a complete
    checkpoint still restores it)."""
    state = CommittedState()
    engine = MultiJoin(_two_way({"mode": "eager"}), journal=True)
    state.commit(engine, _feed(engine, 1_000, 0), 0)
    assert state.scalars is not None
    complete = json.loads(state.scalars)
    damaged = {} if lost == "all" else {k: v for k, v in complete.items() if k not in lost}
    fresh = MultiJoin(_two_way({"mode": "eager"}), journal=True)
    with pytest.raises(IncompleteCheckpointError, match="checkpoint scalars lack next_seq") as raised:
        fresh.restore([], damaged)
    assert all(name in str(raised.value) for name in (lost if lost != "all" else ["idle", "exp_epoch"]))
    assert fresh.buffered == 0 and math.isinf(fresh.watermark)
    fresh.restore([], complete)
    assert fresh.watermark == engine.watermark
