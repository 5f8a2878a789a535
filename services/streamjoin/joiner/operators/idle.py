"""Which inputs of an operator are idle: no record for `idle_timeout` and nothing left unread
(docs/queries.md, watermark; docs/joiner.md, "Idle partitions").

An input partition goes idle once it brought no record for the idle timeout (wall time) and it is
known to be caught up (`backlog.ReadPositions`): a partition that still holds records the operator
has not read (the broker down, a worker behind on a backlog) keeps holding the watermark back, as
Kafka Streams' task idling does. An idle partition stops holding the watermark back; its next
record clears the flag (the engine's `add` does that itself). When input resumes after every
partition was idle, the engine clears every flag at once: each partition holds the watermark
again, and its timeout starts over from then (the tracker reads the engine's flags back with
`is_idle`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["IdleTracker"]


class _Topic(Protocol):
    @property
    def topic(self) -> str: ...


class IdleTracker:
    """Track the last arrival (wall time) of each direct input and flag the engine's idle ones."""

    def __init__(
        self,
        set_idle: Callable[[str, int, bool], None],
        is_idle: Callable[[str, int], bool],
        partition: int,
        streams_of: Mapping[str, Sequence[tuple[str, Any]]],
        limit_ms: float,
        now: float,
        caught_up: Callable[[str], Awaitable[bool]],
    ) -> None:
        """Start with every input of `streams_of` (topic -> its streams) just seen at `now` (monotonic
        seconds); `caught_up(topic)` tells whether the operator's partition of `topic` holds nothing
        it has not read."""
        self._set_idle = set_idle
        self._is_idle = is_idle
        self._partition = partition
        self._streams_of = streams_of
        self._topic_of = {stream: topic for topic, streams in streams_of.items() for stream, _ in streams}
        self._caught_up = caught_up
        self._limit = limit_ms / 1000
        self.last_arrival = dict.fromkeys(self._topic_of, now)
        """The last wall time each input had a record (the batch builder reads it too)."""
        self._idle: set[str] = set()

    async def update(self, data: Iterable[_Topic], now: float) -> bool:
        """Note the topic-partitions that brought records; return True if any input's flag changed."""
        changed = False
        for tp in data:
            for stream, _ in self._streams_of.get(tp.topic, ()):
                self.last_arrival[stream] = now
                if stream in self._idle:  # the engine's `add` clears its own flag
                    self._idle.discard(stream)
                    changed = True
        for stream in [s for s in self._idle if not self._is_idle(s, self._partition)]:
            self._idle.discard(stream)  # input resumed after every partition was idle
            self.last_arrival[stream] = now
        caught_up: dict[str, bool] = {}  # per topic: a self-join reads one partition for two inputs
        for stream, topic in self._topic_of.items():  # (the builder notes re-keyed inputs' arrivals too)
            if stream in self._idle or now - self.last_arrival[stream] <= self._limit:
                continue
            if topic not in caught_up:
                caught_up[topic] = await self._caught_up(topic)
            if caught_up[topic]:
                self._set_idle(stream, self._partition, True)
                self._idle.add(stream)
                changed = True
        return changed
