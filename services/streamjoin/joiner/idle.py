"""Which inputs of an operator are idle: no record for `idle_timeout` (docs/queries.md, watermark).

An idle input partition stops holding the query's watermark back; its next record clears the flag
(the engine's `add` does that itself). When input resumes after every partition was idle, the
engine clears every flag at once: each partition holds the watermark again, and its timeout starts
over from then (the tracker reads the engine's flags back with `is_idle`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["IdleTracker"]


class _Topic(Protocol):
    @property
    def topic(self) -> str: ...


class IdleTracker:
    """Track the last arrival (wall time) of each input and flag the engine's idle inputs."""

    def __init__(
        self,
        set_idle: Callable[[str, int, bool], None],
        is_idle: Callable[[str, int], bool],
        partition: int,
        streams_of: Mapping[str, Sequence[tuple[str, Any]]],
        streams: Iterable[str],
        limit_ms: float,
        now: float,
    ) -> None:
        """Start with every input just seen at `now` (monotonic seconds)."""
        self._set_idle = set_idle
        self._is_idle = is_idle
        self._partition = partition
        self._streams_of = streams_of
        self._limit = limit_ms / 1000
        self.last_arrival = dict.fromkeys(streams, now)
        """The last wall time each input had a record (the batch builder reads it too)."""
        self._idle: set[str] = set()

    def update(self, data: Iterable[_Topic], now: float) -> bool:
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
        for stream, seen in self.last_arrival.items():
            if stream not in self._idle and now - seen > self._limit:
                self._set_idle(stream, self._partition, True)
                self._idle.add(stream)
                changed = True
        return changed
