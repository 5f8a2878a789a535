"""The joiner's idle timeouts in memory (docs/queries.md, "Idle timeout"), for direct inputs
(`IdleTracker`) and the source partitions of re-keyed ones (`RekeyedReader`).

When input resumes after every partition was idle, each one's timeout starts over: the engine clears
every idle flag on the first arrival after an idle flush; a tracker that still believed a quiet
partition idle would never flag it again, and that partition would hold the watermark for good.

A silent partition that is not known to be caught up (records left unread: the broker down, a
backlog, a repartitioner behind) is never idle, however long its silence: it would let the
watermark pass its unread records, which would then be late.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from tests.kafka_records import TopicPartition

from streamjoin.engine import MultiJoin
from streamjoin.joiner.operators.idle import IdleTracker
from streamjoin.joiner.rekeyed.reader import RekeyedInput, RekeyedReader, RekeySetup
from streamjoin.query import parse_query

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [
            {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 10}},
            {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"range": 10}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)
LIMIT_MS = 1_000


def test_direct_inputs_time_out_again_after_input_resumes() -> None:
    engine = MultiJoin(QUERY, partitions={"a": [0], "b": [0]})
    tracker = _tracker(engine, behind=set())
    engine.add("a", {"ts": 10, "k": 1}, ts=10, offset=0)
    engine.add("b", {"ts": 12, "k": 1}, ts=12, offset=0)
    assert asyncio.run(tracker.update([], now=1.5))  # both quiet for longer than the timeout
    assert engine.is_idle("a", 0) and engine.is_idle("b", 0) and engine.watermark == 12
    # a's next burst begins: the engine makes b hold the watermark again...
    asyncio.run(tracker.update([TopicPartition("t.a", 0)], now=10.0))
    engine.add("a", {"ts": 20, "k": 1}, ts=20, offset=1)
    assert not engine.is_idle("b", 0) and engine.watermark == 12
    # ...and b's timeout starts over then: not idle half a timeout later, idle after a full one.
    asyncio.run(tracker.update([], now=10.1))
    asyncio.run(tracker.update([TopicPartition("t.a", 0)], now=10.6))
    assert not engine.is_idle("b", 0)
    assert asyncio.run(tracker.update([], now=11.2))
    assert engine.is_idle("b", 0) and engine.watermark == 20 - QUERY.lateness


def test_a_silent_direct_input_with_records_unread_is_not_idle() -> None:
    engine = MultiJoin(QUERY, partitions={"a": [0], "b": [0]})
    behind = {"t.b"}  # b's partition holds records the operator has not read (a backlog, a broker down)
    tracker = _tracker(engine, behind=behind)
    engine.add("a", {"ts": 10, "k": 1}, ts=10, offset=0)
    engine.add("b", {"ts": 3, "k": 1}, ts=3, offset=0)
    asyncio.run(tracker.update([TopicPartition("t.a", 0)], now=5.0))  # a speaks on, b is silent
    engine.add("a", {"ts": 40, "k": 1}, ts=40, offset=1)
    asyncio.run(tracker.update([], now=30.0))  # b silent for 30 timeouts, but behind
    assert engine.is_idle("a", 0) and not engine.is_idle("b", 0) and engine.watermark == 3 - QUERY.lateness
    asyncio.run(tracker.update([TopicPartition("t.b", 0)], now=30.2))  # b's backlog is read at last
    assert engine.add("b", {"ts": 4, "k": 1}, ts=4, offset=1), "b's next record is not late"
    behind.clear()  # read up to its end: after a timeout of silence it is idle
    assert not asyncio.run(tracker.update([], now=31.0))
    assert asyncio.run(tracker.update([], now=31.3))
    assert engine.is_idle("b", 0)


def test_the_direct_tracker_leaves_rekeyed_inputs_to_the_reader() -> None:
    engine = MultiJoin(QUERY, partitions={"a": [0], "b": [0, 1]})  # b re-keyed from 2 source partitions
    tracker = IdleTracker(
        engine.set_idle, engine.is_idle, 0, {"t.a": [("a", 0)]}, LIMIT_MS, now=0.0, caught_up=_always
    )  # fmt: skip
    tracker.last_arrival["b"] = 0.0  # the batch builder notes the arrivals of every input it reads
    assert asyncio.run(tracker.update([], now=1.5))
    assert engine.is_idle("a", 0) and not engine.is_idle("b", 0) and not engine.is_idle("b", 1)


async def _always(topic: str) -> bool:
    return True


def _tracker(engine: MultiJoin, *, behind: set[str]) -> IdleTracker:
    async def caught_up(topic: str) -> bool:
        return topic not in behind

    return IdleTracker(
        engine.set_idle,
        engine.is_idle,
        0,
        {"t.a": [("a", 0)], "t.b": [("b", 1)]},
        LIMIT_MS,
        now=0.0,
        caught_up=caught_up,
    )


def test_rekeyed_source_partitions_time_out_again_after_input_resumes() -> None:
    setup = RekeySetup((RekeyedInput("b", "t.b", "internal.b", 2),), b"1.1", _positioned, _repartitioned)
    engine = MultiJoin(QUERY, partitions={"a": [0], "b": [0, 1]})
    reader = RekeyedReader(
        setup,
        {},
        observe=engine.observe,
        set_idle=engine.set_idle,
        is_idle=engine.is_idle,
        idle_ms=LIMIT_MS,
        now=0.0,
    )
    engine.add("a", {"ts": 10, "k": 1}, ts=10, offset=0)
    engine.add("b", {"ts": 11, "k": 1}, ts=11, partition=0, offset=0)
    engine.add("b", {"ts": 12, "k": 1}, ts=12, partition=1, offset=0)
    engine.set_idle("a", 0, True)
    caught_up = _Backlog()
    assert reader.update_idle(1.5, caught_up, {})
    assert engine.watermark == 12  # every partition idle: flushed
    engine.add("b", {"ts": 20, "k": 1}, ts=20, partition=0, offset=1)  # input resumes at source 0
    assert not engine.is_idle("b", 1)
    assert not reader.update_idle(10.0, caught_up, {})  # source 1's timeout starts over now
    assert not engine.is_idle("b", 1) and engine.watermark == 12
    assert reader.update_idle(11.1, caught_up, {})
    assert engine.is_idle("b", 1)


def test_a_silent_rekeyed_source_not_known_caught_up_is_not_idle() -> None:
    setup = RekeySetup((RekeyedInput("b", "t.b", "internal.b", 2),), b"1.1", _positioned, _repartitioned)
    engine = MultiJoin(QUERY, partitions={"a": [0], "b": [0, 1]})
    reader = RekeyedReader(
        setup, {}, observe=engine.observe, set_idle=engine.set_idle, is_idle=engine.is_idle,
        idle_ms=LIMIT_MS, now=0.0,
    )  # fmt: skip
    backlog = _Backlog(behind={("b", 1)})  # its repartitioner has not re-keyed all of source 1 yet
    assert reader.update_idle(1.5, backlog, {})
    assert engine.is_idle("b", 0) and not engine.is_idle("b", 1)
    assert backlog.asked == [{("b", 0): 0.0, ("b", 1): 0.0}]  # the silent ones, with their last arrival
    assert not reader.update_idle(60.0, backlog, {})
    assert not engine.is_idle("b", 1)
    backlog.behind.clear()
    assert reader.update_idle(60.1, backlog, {})
    assert engine.is_idle("b", 1)


class _Backlog:
    """Source partitions known caught up: all but `behind`."""

    def __init__(self, behind: set[tuple[str, int]] | None = None) -> None:
        self.behind = behind or set()
        self.asked: list[dict[tuple[str, int], float]] = []

    def caught_up(
        self, silent_since: Mapping[tuple[str, int], float], read_to: Mapping[str, int], now: float
    ) -> set[tuple[str, int]]:
        self.asked.append(dict(silent_since))
        return set(silent_since) - self.behind


async def _positioned() -> bool:
    return True


async def _repartitioned() -> dict[tuple[str, int], int | None]:
    return {}
