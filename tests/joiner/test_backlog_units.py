"""Whether an operator's input partitions hold records it has not read (joiner/operators/backlog.py), with a
consumer double: the half of the idle rule that silence cannot tell (docs/joiner.md, "Idle
partitions"). The real broker: tests/joiner/test_idle_backlog.py."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from streamjoin.joiner.operators.backlog import ReadPositions, SourceBacklog
from streamjoin.kafka import Consumer, TopicPartition

TP = TopicPartition("t.a", 0)
INTERNAL = TopicPartition("internal.b", 0)
SOURCES = {("b", 0): TopicPartition("t.b", 0), ("b", 1): TopicPartition("t.b", 1)}


@dataclass
class _Consumer:
    """What the broker told the consumer: end offsets (fetch responses, ListOffsets) and positions."""

    highwaters: dict[TopicPartition, int] = field(default_factory=dict)
    polled_ms: dict[TopicPartition, int] = field(default_factory=dict)
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    listed: dict[TopicPartition, int] = field(default_factory=dict)
    broker_down: bool = False
    calls: list[str] = field(default_factory=list)

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.highwaters.get(tp)

    def last_poll_timestamp(self, tp: TopicPartition) -> int | None:
        return self.polled_ms.get(tp)

    async def position(self, tp: TopicPartition) -> int:
        return self.positions[tp]

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        self.calls.append("end_offsets " + ",".join(f"{tp.topic}[{tp.partition}]" for tp in tps))
        if self.broker_down:
            raise ConnectionError("broker down")
        return {tp: self.listed[tp] for tp in tps}


def _caught_up(consumer: _Consumer, now_s: float = 100.0) -> bool:
    read = ReadPositions(_as_consumer(consumer), fresh_ms=1_000, wall=lambda: now_s)
    return asyncio.run(read.caught_up(TP))


def test_a_partition_is_caught_up_at_the_end_of_a_recent_fetch_response() -> None:
    consumer = _Consumer({TP: 50}, {TP: 99_500}, {TP: 50})
    assert _caught_up(consumer)
    consumer.positions[TP] = 49  # one record fetched and not read yet, or not fetched yet
    assert not _caught_up(consumer)


def test_an_unknown_or_old_end_offset_is_not_caught_up() -> None:
    assert not _caught_up(_Consumer({}, {}, {TP: 0}))  # no fetch answered yet
    assert not _caught_up(_Consumer({TP: 50}, {TP: 98_000}, {TP: 50}))  # none for 2 s: the broker down


class _Repartitioners:
    def __init__(self, consumer: _Consumer, positions: dict[tuple[str, int], int | None]) -> None:
        self.consumer = consumer
        self.positions = positions

    async def __call__(self) -> Mapping[tuple[str, int], int | None]:
        self.consumer.calls.append("repartitioned")
        return self.positions


def _backlog(consumer: _Consumer, repartitioned: _Repartitioners, interval_ms: int = 1_000) -> SourceBacklog:
    return SourceBacklog(
        _as_consumer(consumer),
        internal={"b": INTERNAL},
        sources=SOURCES,
        repartitioned=repartitioned,
        interval_ms=interval_ms,
    )


def test_a_source_is_caught_up_once_its_repartitioner_is_and_the_operator_read_what_it_wrote() -> None:
    consumer = _Consumer(listed={SOURCES[("b", 0)]: 10, SOURCES[("b", 1)]: 20, INTERNAL: 300})
    repartitioned = _Repartitioners(consumer, {("b", 0): 10, ("b", 1): 15})  # source 1: 5 not re-keyed

    async def scenario() -> list[set[tuple[str, int]]]:
        backlog = _backlog(consumer, repartitioned)
        silent = {("b", 0): 1.0, ("b", 1): 1.0}
        answers = [backlog.caught_up(silent, {"internal.b": 300}, now=5.0)]  # asks in the background
        await asyncio.sleep(0)
        answers.append(backlog.caught_up(silent, {"internal.b": 299}, now=5.1))  # not read up to 300
        answers.append(backlog.caught_up(silent, {"internal.b": 300}, now=5.2))
        answers.append(backlog.caught_up({("b", 0): 5.05}, {"internal.b": 300}, now=5.3))  # spoke since
        answers.append(backlog.caught_up(silent, {"internal.b": 400}, now=6.1))  # too old: asks again
        await asyncio.sleep(0)
        backlog.close()
        return answers

    assert asyncio.run(scenario()) == [set(), set(), {("b", 0)}, set(), set()]
    # the internal partition's end is listed after the positions were read: it counts their records
    assert consumer.calls[:4] == [
        "end_offsets t.b[0],t.b[1]", "repartitioned", "end_offsets internal.b[0]",
        "end_offsets t.b[0],t.b[1]",  # (asked again at 6.1)
    ]  # fmt: skip


def test_an_answer_outlives_a_short_idle_timeout() -> None:
    """Asked once an idle timeout of 5 ms, an answer read 20 ms later (the next loop) still counts."""
    consumer = _Consumer(listed={SOURCES[("b", 0)]: 10, INTERNAL: 30})
    repartitioned = _Repartitioners(consumer, {("b", 0): 10})

    async def scenario() -> set[tuple[str, int]]:
        backlog = _backlog(consumer, repartitioned, interval_ms=5)
        backlog.caught_up({("b", 0): 1.0}, {"internal.b": 30}, now=5.0)
        await asyncio.sleep(0.01)
        known = backlog.caught_up({("b", 0): 1.0}, {"internal.b": 30}, now=5.02)
        backlog.close()
        return known

    assert asyncio.run(scenario()) == {("b", 0)}


@pytest.mark.parametrize("broken", ["broker", "positions unknown"])
def test_a_source_whose_backlog_cannot_be_read_is_not_caught_up(broken: str) -> None:
    consumer = _Consumer(listed={SOURCES[("b", 0)]: 10, SOURCES[("b", 1)]: 0, INTERNAL: 0})
    consumer.broker_down = broken == "broker"
    repartitioned = _Repartitioners(consumer, {("b", 0): None if broken != "broker" else 10})

    async def scenario() -> set[tuple[str, int]]:
        backlog = _backlog(consumer, repartitioned)
        backlog.caught_up({("b", 0): 1.0}, {"internal.b": 0}, now=5.0)
        await asyncio.sleep(0.01)
        known = backlog.caught_up({("b", 0): 1.0}, {"internal.b": 0}, now=5.1)
        backlog.close()
        return known

    assert asyncio.run(scenario()) == set()


def _as_consumer(consumer: _Consumer) -> Consumer:
    return consumer  # type: ignore[return-value]  # the calls backlog.py makes
