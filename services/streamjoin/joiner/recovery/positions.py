"""Progress markers outside Redis: how a joiner tells lost state from a new query (docs/registry.md).

Each operator writes, to the compacted topic `streamjoin.positions` keyed `<prefix><query>/<partition>`,
a `Marker`: the state of its last committed batch whose outputs the broker acknowledged, as an
index (the entries' input, offset and header, the engine's scalars, the input offsets, where its
outputs end); never the record bytes, which stay in the input topics. It is written at most once a
`interval_ms` (the batch loop first waits for its in-flight publishes) and when the operator stops;
deleting a query writes a tombstone per partition. After `claim`, `decide` compares the checkpoint
Redis gave with the partition's marker:

>>> from streamjoin.engine.checkpoint import REQUIRED_SCALARS
>>> scalars = dict.fromkeys(REQUIRED_SCALARS, 0)   # what every batch commits (`MultiJoin.restore`)
>>> m = Marker("100.0:1", 7, {"t": 42}, {"results": 9, "dead": 0}, None, scalars, {}, [])
>>> decide(False, {}, None, "100.0:1").action
'new'
>>> decide(False, {}, m, "100.0:2").action      # a marker of an earlier definition
'new'
>>> decide(False, {}, m, "100.0:1").action      # Redis lost what the marker says was there
'rebuild'
>>> decide(True, {"t": 42}, m, "100.0:1").action
'resume'
>>> decide(True, {"t": 40}, m, "100.0:1").action  # Redis came back older than the marker
'rebuild'
>>> decide(True, {"t": 42}, m, "100.0:1", lacking=["next_seq"]).action  # scalars lost: rebuild
'rebuild'
>>> decide(True, {"t": 42}, None, "100.0:1", lacking=["next_seq"]).reason  # and nothing to rebuild from
'checkpoint unusable: its scalars lack next_seq; no marker of this incarnation to rebuild it from'
>>> bare = Marker("100.0:1", 7, {"t": 42}, {}, None, {}, {}, [])
>>> decide(False, {}, bare, "100.0:1").action     # a marker without scalars rebuilds nothing
'fail'
>>> Marker.from_bytes(m.to_bytes()) == m
True
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from streamjoin.engine.checkpoint import missing_scalars
from streamjoin.engine.entry import Entry
from streamjoin.joiner.batch.builder import BuiltBatch
from streamjoin.joiner.publish.output_topics import OutputTopics
from streamjoin.joiner.recovery.marker import Marker
from streamjoin.joiner.recovery.published import PublishedIds
from streamjoin.kafka import KafkaClients, KeyedLog, LogRecord
from streamjoin.state.base import Checkpoint, StateStore
from streamjoin.state.redis.codec import pack_entry

__all__ = [
    "DEFAULT_POSITIONS_TOPIC",
    "Decision",
    "Marker",
    "PositionKeeper",
    "PositionLog",
    "decide",
    "outputs_of",
]

_log = logging.getLogger(__name__)

_MarkerRow = tuple[int, int, str, int]
"""A held entry as a marker lists it: input, offset, packed header, source partition (-1: its own)."""
_CachedRow = tuple[int, bool, _MarkerRow]
"""A marker row with the `seq` and `passes` it was packed with."""

DEFAULT_POSITIONS_TOPIC = "streamjoin.positions"
_MAX_MARKER_BYTES = 900_000
"""A marker larger than this (compressed) is not written: under the broker's default message limit."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What an operator does after `claim`: `resume` the checkpoint, start a `new` query at its
    `start`, `rebuild` the state the marker describes (Redis lost it or rolled back), or `fail`: the
    state must be rebuilt and no marker can rebuild it (the reason says why; nothing is published)."""

    action: Literal["new", "resume", "rebuild", "fail"]
    reason: str


def decide(
    positioned: bool,
    offsets: Mapping[str, int],
    marker: Marker | None,
    incarnation: str,
    *,
    lacking: Sequence[str] = (),
) -> Decision:
    """Return what to do with a claimed checkpoint (`positioned`, its `offsets`, the engine scalars
    it `lacking`: `missing_scalars`) given the partition's marker: a marker of this incarnation that
    the checkpoint is missing or behind, or whose checkpoint lost its scalars, means lost state."""
    broken = f"its scalars lack {', '.join(lacking)}" if positioned and lacking else ""
    if marker is None or marker.incarnation != incarnation:
        if broken:
            nothing = "no marker of this incarnation to rebuild it from"
            return Decision("fail", f"checkpoint unusable: {broken}; {nothing}")
        why = "no marker" if marker is None else f"marker of incarnation {marker.incarnation}"
        return Decision("resume" if positioned else "new", why)
    behind = sorted(t for t, o in marker.offsets.items() if offsets.get(t, -1) < o)
    if not positioned:
        reason = f"state lost: the marker has batch {marker.batch}, Redis nothing"
    elif broken:
        reason = f"checkpoint unusable: {broken}"
    elif behind:
        reason = f"state rolled back: inputs {behind} behind the marker"
    else:
        return Decision("resume", "checkpoint at or past the marker")
    if unmarked := missing_scalars(marker.scalars):  # (never written so: a marker follows a commit)
        return Decision("fail", f"{reason}; the marker lacks the scalars {', '.join(unmarked)} to rebuild it")
    return Decision("rebuild", reason)


class PositionLog:
    """The markers of one worker's operators on the compacted topic (shared by them)."""

    def __init__(
        self, kafka: KafkaClients, *, prefix: str, topic: str = DEFAULT_POSITIONS_TOPIC, cache_ms: int = 2_000
    ) -> None:
        self.kafka = kafka
        self._log = KeyedLog(kafka, topic)
        self._prefix = prefix
        self._cache_ms = cache_ms
        self._read: tuple[float, dict[str, bytes | None]] | None = None
        self._reading: asyncio.Lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()

    def key(self, query: str, partition: int) -> str:
        """Return the marker key of (query, partition)."""
        return f"{self._prefix}{query}/{partition}"

    async def marker(self, query: str, partition: int) -> Marker | None:
        """Return the latest marker of (query, partition), None if there is none (or a tombstone).

        Operators claiming at once (a Redis restarted empty) share one read of the topic.
        """
        raw = await self.read(self.key(query, partition))
        if raw is None:
            return None
        try:
            return Marker.from_bytes(raw)
        except ValueError as exc:
            _log.warning("ignoring the marker of %s[%d]: %s", query, partition, exc)
            return None

    async def write(self, query: str, partition: int, marker: Marker | None) -> None:
        """Append `marker` (None: a tombstone) and wait for the broker's acknowledgement."""
        value = marker.to_bytes() if marker is not None else None
        if value is not None and len(value) > _MAX_MARKER_BYTES:
            _log.warning(
                "%s[%d]: marker of %d bytes not written (state too large)", query, partition, len(value)
            )
            return
        await self.put(self.key(query, partition), value)

    async def read(self, key: str) -> bytes | None:
        """Return the latest value of `key` (a full key: `key`, `rekey_key`), None if none."""
        async with self._reading:
            now = time.monotonic()
            if self._read is None or now - self._read[0] > self._cache_ms / 1000:
                latest: dict[str, bytes | None] = {}
                for record in await self._log.read_all():
                    latest[record.key] = record.value
                self._read = (time.monotonic(), latest)
            return self._read[1].get(key)

    async def put(self, key: str, value: bytes | None) -> None:
        """Append `value` under `key` and wait for the broker's acknowledgement."""
        async with self._write_lock:  # one producer: appends of several operators in turn
            await self._log.append([LogRecord(key, value)])
        if self._read is not None:
            self._read[1][key] = value

    def rekey_key(self, query: str, position_name: str, partition: int) -> str:
        """Return the key of a repartitioner's position (`repartition.marks`); apart from every `key`."""
        return f"{self._prefix}rekey/{query}/{position_name}/{partition}"

    def keeper(
        self, query: str, partition: int, incarnation: str, store: StateStore, outputs: OutputTopics
    ) -> PositionKeeper:
        """Return the keeper of one operator (see `PositionKeeper`)."""
        return PositionKeeper(self, query, partition, incarnation, store=store, outputs=outputs)

    async def forget(
        self, query: str, partitions: Iterable[int], rekeyed: Iterable[tuple[str, int]] = ()
    ) -> None:
        """Write a tombstone for each partition of a deleted query and for each of its repartitioners'
        marks (`rekeyed`: (position name, source partition)); a failure is only logged: a marker of
        a deleted query is never used, a query registered again is another incarnation."""
        records = [LogRecord(self.key(query, p), None) for p in partitions]
        records += [LogRecord(self.rekey_key(query, name, p), None) for name, p in rekeyed]
        try:
            async with self._write_lock:
                await self._log.append(records)
        except Exception as exc:
            _log.warning("markers of deleted query %s not tombstoned: %s", query, exc)
            return
        if self._read is not None:
            for r in records:
                self._read[1][r.key] = None

    def close(self) -> None:
        """Flush the producer."""
        self._log.close()


class PositionKeeper:
    """One operator's side: follow the entries its commits hold, and write markers (module docstring)."""

    def __init__(
        self,
        log: PositionLog,
        query: str,
        partition: int,
        incarnation: str,
        *,
        store: StateStore,
        outputs: OutputTopics,
        interval_ms: int = 1_000,
    ) -> None:
        """Keep the markers of (query, partition) in `log`; `store` and `outputs` are the operator's
        (a rebuild commits to the one and reads the other)."""
        self.log = log
        self.store = store
        self.outputs = outputs
        self.query = query
        self.partition = partition
        self.incarnation = incarnation
        self.skip: PublishedIds | None = None
        """After a rebuild: what was published after the marker, dropped when produced again."""
        self._interval = interval_ms / 1000
        self._entries: dict[tuple[int, int, int], Entry] = {}
        self._rows: dict[tuple[int, int, int], _CachedRow] = {}
        self._sources: dict[str, int] = {}
        self._outputs: dict[str, int] = {}
        self._offsets: dict[str, int] = {}
        self._scalars: Mapping[str, Any] = {}
        self._counters: dict[str, int] = {}
        self._last = 0.0
        self._marked_batch = -1
        self._pending: asyncio.Task[None] | None = None

    def reset(self, checkpoint: Checkpoint) -> None:
        """Start from a claimed (or rebuilt, or just positioned) checkpoint."""
        self._entries = {(e.input, e.partition, e.offset): e for e in checkpoint.entries}
        self._rows = {}
        self._sources = dict(checkpoint.sources)
        acked = {n: box.acked_offset for n, box in checkpoint.outboxes.items()}
        self._outputs = outputs_of(checkpoint.output_start, acked)
        self._offsets = dict(checkpoint.offsets)
        self._scalars = checkpoint.scalars or {}
        self._counters = dict(checkpoint.counters)
        if self.skip is not None:  # what an attempt that failed dropped is not published yet
            self.skip.undo()
        self._marked_batch = -1  # the first tick writes one: a new query is marked at once

    def batch(self, built: BuiltBatch) -> BuiltBatch:
        """Return the batch about to be committed, without what `skip` holds, and follow its state
        (if the commit fails the attempt ends, and the next one `reset`s the keeper)."""
        if self.skip is not None:
            self.skip.confirm()  # a batch is built: the previous one was committed
            if self.skip:
                built = self.skip.filter(built)
            else:
                self.skip = None
        commit, held = built.commit, self._entries
        for entry, _ in commit.added:
            held[(entry.input, entry.partition, entry.offset)] = entry
        rows = self._rows
        for entry in commit.expired:
            key = (entry.input, entry.partition, entry.offset)
            held.pop(key, None)
            rows.pop(key, None)
        self._sources.update(commit.sources)
        for name, value in commit.counters.items():
            self._counters[name] = self._counters.get(name, 0) + value
        self._offsets = dict(commit.offsets)
        self._scalars = commit.scalars
        return built

    def published(self, outbox: str, offset: int) -> None:
        """Record that outbox `outbox`'s records up to output offset `offset` are acknowledged."""
        self._outputs[outbox] = max(self._outputs.get(outbox, 0), offset + 1)

    async def tick(self, batch: int, inflight: Sequence[asyncio.Future[int]]) -> None:
        """Write a marker of `batch` if one is due: wait for the publishes in flight, and write none
        if one of them failed (the attempt ends on it). The output offsets may lag behind the
        acknowledgements just waited for: reading the output from earlier is only slower."""
        if batch == self._marked_batch or time.monotonic() - self._last < self._interval or not self._scalars:
            return  # (no scalars: no batch since the query was positioned; nothing to rebuild yet)
        if inflight:
            await asyncio.wait(inflight)
            if any(f.cancelled() or f.exception() is not None for f in inflight):
                return
        self._last = time.monotonic()
        if self._pending is not None and not self._pending.done():
            return  # the previous marker is still being written: the next tick writes this one
        self._marked_batch = batch
        self._pending = asyncio.ensure_future(self._write(self.marker(batch)))

    def marker(self, batch: int) -> Marker:
        """Return the marker of the state followed so far (that of `batch`)."""
        watermark = self._scalars.get("watermark")
        return Marker(
            incarnation=self.incarnation,
            batch=batch,
            offsets=dict(self._offsets),
            outputs=dict(self._outputs),
            watermark=float(watermark) if isinstance(watermark, int | float) else None,
            scalars=dict(self._scalars),
            counters=dict(self._counters),
            entries=self._marker_rows(),
            sources=dict(self._sources),
            at=time.time(),
            # `taken` ids are of committed batches by now (`batch` confirms them): gone for good
            skip_results=sorted(self.skip.results) if self.skip is not None else [],
            skip_dead=sorted(self.skip.dead) if self.skip is not None else [],
        )

    def _marker_rows(self) -> list[_MarkerRow]:
        """Return the marker's row of every held entry. A row is packed again only when its entry's
        header changed since the last marker (`seq` on release, `passes` when shed): held records
        are packed about once, not once a marker, which matters while a watermark held back keeps a
        whole backlog in the windows (a re-keyed input's slowest source partition, a start at
        `earliest`)."""
        rows, out, partition = self._rows, [], self.partition
        for key, e in self._entries.items():
            cached = rows.get(key)
            if cached is None or cached[0] != e.seq or cached[1] != e.passes:
                row = (
                    e.input,
                    e.offset,
                    pack_entry(e).decode(),
                    -1 if e.partition == partition else e.partition,
                )
                cached = rows[key] = (e.seq, e.passes, row)
            out.append(cached[2])
        return out

    async def settle(self) -> None:
        """Wait for the marker being written (a new attempt must not have an older one land later)."""
        if self._pending is not None:
            await asyncio.gather(self._pending, return_exceptions=True)

    async def final(self, batch: int) -> None:
        """Write the marker of `batch` and wait for it (the operator stops with nothing in flight); none
        before the first batch, as `tick`: a marker without the engine's scalars cannot be rebuilt from."""
        if self._pending is not None:
            await asyncio.gather(self._pending, return_exceptions=True)
        if batch != self._marked_batch and self._scalars:
            self._marked_batch = batch
            await self._write(self.marker(batch))

    async def _write(self, marker: Marker) -> None:
        try:
            await self.log.write(self.query, self.partition, marker)
        except Exception as exc:  # a marker is an optimisation of recovery, never a reason to stop
            _log.warning("%s[%d]: marker not written: %s", self.query, self.partition, exc)


def outputs_of(output_start: Mapping[str, int], acked_offsets: Mapping[str, int]) -> dict[str, int]:
    """Return where a checkpoint's outputs end: after its last acknowledged record, or its start."""
    names: Sequence[str] = sorted(set(output_start) | set(acked_offsets))
    return {n: max(output_start.get(n, 0), acked_offsets.get(n, -1) + 1) for n in names}
