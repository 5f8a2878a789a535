"""The operator's side of re-keyed inputs (docs/joiner.md, "Re-keyed inputs").

An operator reads partition q of each re-keyed input's internal topic. `RekeyedReader` turns what it
reads into what the engine would have seen reading the user's topic: each record becomes (input,
source partition, source offset), so results keep the ids they would have had; a progress marker
only moves the clock of its source partition (`MultiJoin.observe`); records of another incarnation
of the query are skipped; and duplicates (a repartitioner that crashed before committing its
position writes its last records again) are dropped: records of one source partition reach an
internal partition in source-offset order, so a record at or below the highest source offset seen
for (input, source partition) was seen. Those highest offsets are committed with the operator's
batch (`CommitBatch.sources`), so the filter survives the operator's own crash too.

Each source partition of a re-keyed input holds the watermark and goes idle on its own: the
operator registers all of them when it starts (`RekeySetup.sources`). One goes idle once it sent
nothing for the idle timeout and is known caught up: its repartitioner at the source partition's
end, and the operator past everything that repartitioner wrote to it (`backlog.SourceBacklog`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from streamjoin.engine import MultiJoin
from streamjoin.joiner.rekeyed.format import (
    HEADER_GEN,
    HEADER_MARK,
    HEADER_SOURCE,
    parse_mark,
    parse_position,
)
from streamjoin.kafka import Consumer, TopicPartition, start_offsets
from streamjoin.query.model import StartPosition

__all__ = [
    "RekeySetup",
    "RekeyedInput",
    "RekeyedReader",
    "SourceBacklogView",
    "SourceGroup",
    "SourceRecord",
    "first_offsets",
    "new_reader",
    "wait_positioned",
]


@dataclass(frozen=True, slots=True)
class RekeyedInput:
    """One re-keyed input of a query: where it comes from and where its operators read it."""

    stream: str
    topic: str
    """The user's topic (results and dead letters name it)."""
    internal_topic: str
    sources: int
    """The partition count of `topic`."""


@dataclass(frozen=True, slots=True)
class RekeySetup:
    """What every operator of a query with re-keyed inputs needs to read them."""

    inputs: tuple[RekeyedInput, ...]
    generation: bytes
    """The query incarnation's tag (`rekeyed.format.generation`): other records are skipped."""
    positioned: Callable[[], Awaitable[bool]]
    """True once every repartitioner of the query has its start position (the operator reports
    `running` only then, so a client that waits for it before producing loses nothing)."""
    repartitioned: Callable[[], Awaitable[Mapping[tuple[str, int], int | None]]]
    """The committed position (next source offset) of each (input, source partition)'s
    repartitioner, None for one not positioned yet (`backlog.SourceBacklog` reads it)."""

    @property
    def internal_topics(self) -> dict[str, str]:
        """Return the internal topic of each re-keyed input."""
        return {i.stream: i.internal_topic for i in self.inputs}

    @property
    def sources(self) -> dict[str, range]:
        """Return the source partitions of each re-keyed input (each holds the watermark)."""
        return {i.stream: range(i.sources) for i in self.inputs}


class SourceGroup(NamedTuple):
    """The records of one source partition read from an internal topic (`BatchBuilder.build`
    takes them like a topic-partition's: `topic` names the input, `partition` is the source's)."""

    topic: str
    partition: int


class SourceRecord:
    """A re-keyed record as the source topic held it (what `BatchBuilder` reads of a message)."""

    __slots__ = ("key", "offset", "partition", "timestamp", "topic", "value")

    def __init__(self, topic: str, partition: int, offset: int, m: Any) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.value: bytes | None = m.value
        self.timestamp: int = m.timestamp
        self.key: bytes | None = m.key


class RekeyedReader:
    """Translate one internal partition's records for the engine; one per operator attempt."""

    def __init__(
        self,
        setup: RekeySetup,
        committed: Mapping[str, int],
        *,
        observe: Callable[[str, int, float], None],
        set_idle: Callable[[str, int, bool], None],
        is_idle: Callable[[str, int], bool],
        idle_ms: float,
        now: float,
    ) -> None:
        """Start from the `committed` highest source offsets (`CommitBatch.sources`)."""
        self.setup = setup
        self._by_topic = {i.internal_topic: i for i in setup.inputs}
        self._generation = setup.generation
        self._observe = observe
        self._set_idle = set_idle
        self._is_idle = is_idle
        self._limit = idle_ms / 1000
        self.highest: dict[tuple[str, int], int] = {}
        """The highest source offset taken per (input, source partition)."""
        for name, offset in committed.items():
            stream, _, partition = name.rpartition(":")
            self.highest[(stream, int(partition))] = offset
        self._dirty: set[tuple[str, int]] = set()
        self._next: dict[str, int] = {}
        self._marks: list[tuple[str, int, float]] = []
        self.last_arrival = {(i.stream, s): now for i in setup.inputs for s in range(i.sources)}
        self._idle: set[tuple[str, int]] = set()
        self.duplicates = 0
        """Duplicates dropped by this reader (not committed: a statistic)."""

    @property
    def topics(self) -> list[str]:
        """Return the internal topics read."""
        return list(self._by_topic)

    def translate(self, messages: Mapping[Any, Iterable[Any]], now: float) -> dict[Any, Any]:
        """Return `messages` with each internal topic-partition's records replaced by their
        `SourceGroup`s; duplicates and other incarnations' records are dropped. The markers and the
        next offsets of the internal topics are kept for `finish`."""
        out: dict[Any, Any] = {}
        gen_wanted = self._generation
        highest, dirty, arrival = self.highest, self._dirty, self.last_arrival
        for tp, msgs in messages.items():
            rekeyed = self._by_topic.get(tp.topic)
            if rekeyed is None:
                out[tp] = msgs
                continue
            stream, topic = rekeyed.stream, rekeyed.topic
            groups: dict[int, list[SourceRecord]] = {}
            last = None
            for m in msgs:
                last = m
                gen = src = mark = None
                for name, value in m.headers or ():
                    if name == HEADER_SOURCE:
                        src = value
                    elif name == HEADER_GEN:
                        gen = value
                    elif name == HEADER_MARK:
                        mark = value
                if gen != gen_wanted:
                    continue
                if src is None:
                    if mark is not None:  # applied in `finish`, once the batch's records are in
                        s, ts = parse_mark(mark)
                        arrival[(stream, s)] = now
                        self._idle.discard((stream, s))
                        self._marks.append((stream, s, ts))
                    continue
                s, offset = parse_position(src)
                key = (stream, s)
                arrival[key] = now
                self._idle.discard(key)
                if offset <= highest.get(key, -1):
                    self.duplicates += 1
                    continue
                highest[key] = offset
                dirty.add(key)
                group = groups.get(s)
                if group is None:
                    group = groups[s] = []
                group.append(SourceRecord(topic, s, offset, m))
            if last is not None:
                self._next[tp.topic] = last.offset + 1
            for s, group in groups.items():
                out[SourceGroup(tp.topic, s)] = group
        return out

    def finish(self, offsets: dict[str, int]) -> dict[str, int]:
        """Apply the markers read since `translate` (after the batch's records were added: a record
        that came before a marker must not find the watermark already moved past it), set the next
        offsets of the internal topics, and return the highest source offsets that changed, to
        commit with the batch (`CommitBatch.sources`)."""
        offsets.update(self._next)
        self._next.clear()
        for stream, s, ts in self._marks:  # a marker follows the records it covers: add them first
            self._observe(stream, s, ts)
        self._marks.clear()
        changed = {f"{stream}:{s}": self.highest[(stream, s)] for stream, s in self._dirty}
        self._dirty.clear()
        return changed

    def update_idle(self, now: float, backlog: SourceBacklogView, offsets: Mapping[str, int]) -> bool:
        """Flag the source partitions that sent nothing (records or markers) for the idle timeout and
        that `backlog` knows are caught up (their repartitioner, and the operator's internal
        partition as far as `offsets`, the next offset it reads of each topic); return True if any
        flag changed (the engine clears a flag itself when one sends again, and every flag when
        input resumes after all were idle: their timeouts start over)."""
        changed = False
        for key in [k for k in self._idle if not self._is_idle(*k)]:
            self._idle.discard(key)
            self.last_arrival[key] = now
        silent = {
            key: seen
            for key, seen in self.last_arrival.items()
            if key not in self._idle and now - seen > self._limit
        }
        if not silent:
            return False
        for key in backlog.caught_up(silent, offsets, now):
            self._set_idle(key[0], key[1], True)
            self._idle.add(key)
            changed = True
        return changed


class SourceBacklogView(Protocol):
    """Which silent source partitions are known to hold nothing unread (`backlog.SourceBacklog`)."""

    def caught_up(
        self, silent_since: Mapping[tuple[str, int], float], read_to: Mapping[str, int], now: float
    ) -> set[tuple[str, int]]:
        """Return those of `silent_since` (source partition -> last arrival) known caught up since,
        given `read_to` (topic -> the next offset the operator reads)."""
        ...


async def first_offsets(
    consumer: Consumer,
    tps: Iterable[TopicPartition],
    start: StartPosition,
    setup: RekeySetup | None,
    *,
    exact_ends: bool,
) -> dict[str, int]:
    """Return where a new operator starts each topic: the query's `start`, but the internal topics
    from their beginning (they hold only what the repartitioners wrote for the query, which started
    at `start` themselves; an earlier incarnation's records are skipped by their tag)."""
    internal = set(setup.internal_topics.values()) if setup is not None else set()
    direct = [tp for tp in tps if tp.topic not in internal]
    found = await start_offsets(consumer, direct, start, exact_ends=exact_ends) if direct else {}
    rekeyed = [tp for tp in tps if tp.topic in internal]
    if rekeyed:
        found.update(await start_offsets(consumer, rekeyed, "earliest", exact_ends=exact_ends))
    return {tp.topic: off for tp, off in found.items()}


async def wait_positioned(setup: RekeySetup | None, stopping: asyncio.Event, poll_ms: int = 200) -> None:
    """Return once every repartitioner of the query has its start position (or `stopping` is set)."""
    while setup is not None and not stopping.is_set() and not await setup.positioned():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(poll_ms / 1000):
                await stopping.wait()


def new_reader(
    setup: RekeySetup | None, committed: Mapping[str, int], engine: MultiJoin, idle_ms: float
) -> RekeyedReader | None:
    """Return the reader of an operator attempt whose engine is `engine` (None without re-keyed inputs)."""
    if setup is None:
        return None
    return RekeyedReader(
        setup,
        committed,
        observe=engine.observe,
        set_idle=engine.set_idle,
        is_idle=engine.is_idle,
        idle_ms=idle_ms,
        now=time.monotonic(),
    )
