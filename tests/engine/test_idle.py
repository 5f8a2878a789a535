"""Idle partitions (docs/queries.md, "Idle timeout"): what `set_idle` releases without `finish()`.

A joiner never calls `finish()`: once its inputs fall silent, only the idle flags its timeout sets
move the watermark. When every partition is idle, the watermark is the largest newest timestamp
(as Flink's watermark valve flushes when all its inputs are idle), so the engine joins everything
it holds: the oracle's results over all the events, with no record still waiting.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from streamjoin.engine import MultiJoin
from streamjoin.query import parse_query
from streamjoin.testing import Event, ResultKey, expected_results, replay_events, result_key

from .harness import COMBINATIONS, Combination

_STREAMS = ("S1", "S2", "S3", "S4")

# The tail of golab5 at half scale (bench/peers): the inputs stop at different timestamps, S2 first.
# Released up to the smallest newest timestamp (1099995) or the one of the last input left active
# (S1, 1099997), the results whose youngest record is S4's at 1099998 are never joined.
_TAIL = [
    ("S2", 1099990),
    ("S1", 1099991),
    ("S3", 1099993),
    ("S4", 1099994),
    ("S2", 1099995),
    ("S4", 1099996),
    ("S1", 1099997),
    ("S4", 1099998),
    ("S3", 1099999),
]


def _query_and_events() -> tuple[dict[str, Any], list[Event]]:
    raw = {
        "name": "q",
        "inputs": [{"stream": s, "timestamp": "ts", "window": {"range": 20}} for s in _STREAMS],
        "where": [["S1.attr", "=", "S2.attr"], ["S2.attr", "=", "S3.attr"], ["S3.attr", "=", "S4.attr"]],
        "output": {"topic": "o"},
    }
    lines = [(s, {"ts": ts, "attr": 7}) for s, ts in _TAIL]
    return raw, replay_events(parse_query(raw), lines)


@pytest.mark.parametrize("combination", COMBINATIONS, ids=str)
@pytest.mark.parametrize("idle_order", list(itertools.permutations(_STREAMS)), ids="-".join)
def test_every_partition_idle_joins_all_it_holds(
    combination: Combination, idle_order: tuple[str, ...]
) -> None:
    raw, events = _query_and_events()
    query = parse_query({**raw, **combination.fields()})
    want = expected_results(query, events)
    assert want, "the case must have results"
    engine = MultiJoin(query)
    got: Counter[ResultKey] = Counter()
    for e in events:
        assert engine.add(e.stream, dict(e.record), ts=e.ts, partition=e.partition, offset=e.offset)
    got.update(map(result_key, engine.advance()))
    for stream in idle_order:  # the idle timeouts fire one input after another
        engine.set_idle(stream, 0, True)
        got.update(map(result_key, engine.advance()))
    assert got == want, f"missing {want - got}, extra {got - want}"
    assert engine.buffered == 0
    assert engine.watermark == max(ts for _, ts in _TAIL)


def test_after_an_idle_flush_every_partition_holds_the_watermark_again() -> None:
    raw, events = _query_and_events()
    engine = MultiJoin(parse_query({**raw, "lateness": 5}))
    for e in events:
        engine.add(e.stream, dict(e.record), ts=e.ts, partition=e.partition, offset=e.offset)
    for stream in _STREAMS:
        engine.set_idle(stream, 0, True)
    engine.advance()
    assert engine.watermark == 1099999 and engine.buffered == 0  # flushed, lateness or not
    # S2 speaks again: every input is active again and holds the watermark at its newest timestamp,
    # so S1's record older than S2's (the disorder of one burst) is not late; one at the flushed
    # watermark itself is (everything up to it was joined).
    assert engine.add("S2", {"ts": 1100005, "attr": 7}, ts=1100005, partition=0, offset=2)
    assert not any(engine.is_idle(s, 0) for s in _STREAMS)
    assert engine.watermark == 1099999
    assert engine.add("S1", {"ts": 1100001, "attr": 7}, ts=1100001, partition=0, offset=2)
    assert not engine.add("S1", {"ts": 1099999, "attr": 7}, ts=1099999, partition=0, offset=3)
    # S3 and S4 stay quiet: the watermark waits until their idle timeout passes again.
    engine.advance()
    assert engine.watermark == 1099999
    engine.set_idle("S3", 0, True)
    engine.set_idle("S4", 0, True)
    assert engine.add("S1", {"ts": 1100010, "attr": 7}, ts=1100010, partition=0, offset=4)
    assert engine.watermark == min(1100005, 1100010) - 5  # S1 and S2 hold it, minus the lateness
