"""Whether an operator's input partitions hold records it has not read: the half of the idle rule
that silence cannot tell (docs/joiner.md, "Idle partitions").

A partition that brought nothing for the idle timeout goes idle only once it is known to be caught
up, as Kafka Streams' task idling lets a task proceed past an empty partition only when its fetch
position is at the end offset the broker last reported (KIP-695). Silence alone is no proof: the
broker may be down, a repartitioner may be retrying, the worker may be behind on a backlog.

- `ReadPositions`, the operator's partition of a direct input: caught up when the consumer's
  position is at or past the end offset of the last fetch response, and that response is at most
  `FRESH_MS` old. No response yet, or none
  lately (the broker down, the leader moved): not caught up. This costs no request: the consumer
  fetches every partition it has no records buffered of all the time.
- `SourceBacklog`, a source partition of a re-keyed input: caught up when its repartitioner's
  committed position is at or past the source partition's end offset (ListOffsets), and the
  operator has read its internal partition up to the end offset that partition had once that
  position was read. A repartitioner commits a position only once the records before it are
  acknowledged in the internal topics, so that end offset counts every one of them routed to the
  operator; the internal partition's other records (of other source partitions, still flowing) need
  not be read past it. The answer takes two ListOffsets requests and a Redis read, so it is asked
  in the background, only while a source partition is silent for the idle timeout, at most once an
  `interval_ms`, and it holds for `FRESH_MS` after it was asked: an operator that does not read up
  to it by then (behind on its internal partition) asks again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from streamjoin.joiner.rekeyed.reader import RekeySetup
from streamjoin.kafka import Consumer, TopicPartition

__all__ = ["FRESH_MS", "ReadPositions", "SourceBacklog", "SourceKey"]

_log = logging.getLogger(__name__)

FRESH_MS = 1_000
"""How old an end offset may be and still tell that a partition is caught up (a consumer with
nothing buffered has a fetch response every `fetch_wait_ms`, 500 ms by default; a later one only
delays the idle flush)."""

SourceKey = tuple[str, int]
"""(re-keyed input, source partition)."""


class ReadPositions:
    """Tell whether a partition the consumer reads is caught up (see the module docstring)."""

    def __init__(
        self, consumer: Consumer, *, fresh_ms: int = FRESH_MS, wall: Callable[[], float] = time.time
    ) -> None:
        self._consumer = consumer
        self._fresh = fresh_ms / 1000
        self._wall = wall

    async def caught_up(self, tp: TopicPartition) -> bool:
        """Return True if the consumer has read everything the last (recent) fetch response of `tp` held."""
        consumer = self._consumer
        end = consumer.highwater(tp)
        polled_ms = consumer.last_poll_timestamp(tp)
        if end is None or polled_ms is None or self._wall() - polled_ms / 1000 > self._fresh:
            return False
        return await consumer.position(tp) >= end


@dataclass(frozen=True, slots=True)
class _Answer:
    asked_at: float
    """When the probe began (monotonic seconds)."""
    targets: Mapping[SourceKey, int]
    """For each source partition whose repartitioner was at its end: the end offset of the
    operator's internal partition listed after that (reading up to it reads all it re-keyed)."""


class SourceBacklog:
    """Tell which source partitions of re-keyed inputs are caught up (see the module docstring)."""

    def __init__(
        self,
        consumer: Consumer,
        *,
        internal: Mapping[str, TopicPartition],
        sources: Mapping[SourceKey, TopicPartition],
        repartitioned: Callable[[], Awaitable[Mapping[SourceKey, int | None]]],
        interval_ms: float,
    ) -> None:
        """`internal`: the operator's partition of each re-keyed input's internal topic; `sources`:
        each source partition; `repartitioned`: the committed position of each one's repartitioner;
        `interval_ms`: how often at most to ask (an answer holds for `FRESH_MS`)."""
        self._consumer = consumer
        self._internal = dict(internal)
        self._sources = dict(sources)
        self._repartitioned = repartitioned
        self._interval = interval_ms / 1000
        self._holds = FRESH_MS / 1000
        self._probe: asyncio.Task[_Answer] | None = None
        self._answer: _Answer | None = None

    @classmethod
    def of(
        cls, consumer: Consumer, setup: RekeySetup, partition: int, *, interval_ms: float
    ) -> SourceBacklog:
        """Return the backlog of the re-keyed inputs of `setup` read by operator `partition`."""
        return cls(
            consumer,
            internal={i.stream: TopicPartition(i.internal_topic, partition) for i in setup.inputs},
            sources={
                (i.stream, s): TopicPartition(i.topic, s) for i in setup.inputs for s in range(i.sources)
            },
            repartitioned=setup.repartitioned,
            interval_ms=interval_ms,
        )

    def caught_up(
        self, silent_since: Mapping[SourceKey, float], read_to: Mapping[str, int], now: float
    ) -> set[SourceKey]:
        """Return the keys of `silent_since` (source partition -> its last arrival, monotonic) that
        the latest answer, begun after that arrival and at most `FRESH_MS` old, knows caught up,
        given `read_to` (internal topic -> the next offset the operator reads); ask again (in the
        background, at most once an `interval_ms`) while some are not known."""
        probe = self._probe
        if probe is not None and probe.done():
            self._probe = None
            self._answer = _answer_of(probe)
        answer = self._answer
        known: set[SourceKey] = set()
        if answer is not None and now - answer.asked_at <= self._holds:
            for key, seen in silent_since.items():
                target = answer.targets.get(key)
                read = read_to.get(self._internal[key[0]].topic, 0)
                if target is not None and seen < answer.asked_at and read >= target:
                    known.add(key)
        asked_at = answer.asked_at if answer is not None else -float("inf")
        if len(known) < len(silent_since) and self._probe is None and now - asked_at >= self._interval:
            self._answer = _Answer(now, {})  # asked now: the next probe waits `interval_ms`
            self._probe = asyncio.ensure_future(self._ask(now, sorted(set(silent_since) - known)))
        return known

    def close(self) -> None:
        """Cancel a probe under way (the operator's attempt ends)."""
        probe, self._probe = self._probe, None
        if probe is not None:
            probe.cancel()
            probe.add_done_callback(_answer_of)

    async def _ask(self, asked_at: float, keys: list[SourceKey]) -> _Answer:
        consumer = self._consumer
        ends = await consumer.end_offsets([self._sources[k] for k in keys])
        positions = await self._repartitioned()
        fed = [k for k in keys if (pos := positions.get(k)) is not None and pos >= ends[self._sources[k]]]
        internal = {self._internal[stream] for stream, _ in fed}
        listed = await consumer.end_offsets(sorted(internal)) if internal else {}  # after the positions
        return _Answer(asked_at, {k: listed[self._internal[k[0]]] for k in fed})


def _answer_of(probe: asyncio.Task[_Answer]) -> _Answer | None:
    """Return a finished probe's answer; None if it failed (the broker or Redis down: not caught up)."""
    if probe.cancelled():
        return None
    exc = probe.exception()
    if exc is not None:
        _log.debug("re-keyed sources' backlog unknown: %s: %s", type(exc).__name__, exc)
        return None
    return probe.result()
