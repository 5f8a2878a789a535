"""`Repartitioner`: re-key one source partition of a query's input into its internal topic
(docs/joiner.md, "Re-keyed inputs"; docs/exactly-once.md, "Re-keyed inputs").

Life cycle (crash-only, like the operators): claim (query, input, source partition) in Redis, which
fences every earlier owner; position at the committed offset (the first time: at the query's
`start`, committed at once); then loop: read a batch of the source partition, produce each record's
raw value unchanged to internal partition `route(...)` with headers `sj-src` (source partition and
offset) and `sj-gen` (the query's incarnation) and the source timestamp, then a progress marker to
every internal partition when due. A batch's next source offset is committed only once the producer
acknowledged it and every earlier batch (at least once: the operators drop the duplicates); up to
`MAX_INFLIGHT` batches wait for their acknowledgements while the next ones are read. Held by a
rebalance (`operators.hold.Hold`), it commits what was acknowledged and waits to be released.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import orjson

from streamjoin.joiner.health import Health
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.operators.hold import Hold, Holdable
from streamjoin.joiner.operators.supervised import Attempts, stop_bounded
from streamjoin.joiner.rekeyed.format import (
    HEADER_GEN,
    HEADER_MARK,
    HEADER_SOURCE,
    load,
    mark_header,
    route,
    source_header,
)
from streamjoin.joiner.repartition.marks import RekeyMark, RekeyMarks
from streamjoin.joiner.repartition.producer import Delivery, Header, RekeyProducer
from streamjoin.joiner.repartition.source_clock import SourceClock
from streamjoin.kafka import (
    Consumer,
    ConsumerError,
    KafkaClients,
    TopicPartition,
    new_consumer,
    start_consumer,
    start_offsets,
)
from streamjoin.query.model import QueryDef
from streamjoin.state.base import StateUnavailableError
from streamjoin.state.redis.repartition_store import RepartitionStore

__all__ = ["MARK_INTERVAL_MS", "MAX_INFLIGHT", "RekeyJob", "Repartitioner", "position_name"]

_log = logging.getLogger(__name__)

MARK_INTERVAL_MS = 200
"""At most this often (while its largest timestamp advances) a repartitioner sends a marker."""
MAX_INFLIGHT = 8
"""Batches produced and not yet acknowledged, at most (the next batch is read meanwhile)."""

_Pending = tuple["asyncio.Future[None]", int | None, str | None]
"""A batch waiting for its acknowledgements: (all written, next source offset, largest timestamp)."""


@dataclass(frozen=True, slots=True)
class RekeyJob:
    """One source partition of one re-keyed input of a query."""

    query: QueryDef
    stream: str
    topic: str
    partition: int
    attribute: str | None
    internal_topic: str
    partitions: int
    """The query's partition count N (the internal topic's)."""
    generation: bytes

    @property
    def position_name(self) -> str:
        """Return the name of its position in Redis (`RepartitionStore`): the incarnation and the
        input, so a worker still running an earlier incarnation's job never takes its position."""
        return position_name(self.generation, self.stream)

    @property
    def name(self) -> str:
        """Return how logs and readiness name it."""
        return f"repartitioner {self.query.name}.{self.stream}[{self.partition}]"


def position_name(generation: bytes, stream: str) -> str:
    """Return the name of the position of input `stream`'s repartitioners of one query incarnation."""
    return f"{generation.decode()}/{stream}"


class Repartitioner(Holdable):
    """Run one `RekeyJob` until stopped; see the module docstring."""

    def __init__(
        self,
        job: RekeyJob,
        *,
        kafka: KafkaClients,
        store: RepartitionStore,
        producer: RekeyProducer,
        owner: str,
        health: Health,
        config: OperatorConfig,
        marks: RekeyMarks | None = None,
    ) -> None:
        """`marks`: its position outside Redis, where it resumes if Redis lost it (`repartition.marks`)."""
        self.job = job
        self._kafka = kafka
        self._store = store
        self._producer = producer
        self._owner = owner
        self._health = health
        self._config = config
        self._marks = marks
        self._stopping = asyncio.Event()
        self._hold = Hold()
        self._task: asyncio.Task[None] | None = None
        self.clock = SourceClock(job.query, job.stream, job.partition, config.max_future, time.monotonic())
        """The largest valid timestamp re-keyed so far (markers carry it)."""
        self.records = 0
        """Records re-keyed by this process (not committed: a statistic)."""
        self._generation = 0  # the re-keying producer's, when the current attempt began

    def start(self) -> None:
        """Start running in a task."""
        self._task = asyncio.create_task(self._run(), name=self.job.name)

    async def stop(self) -> None:
        """Finish the current batch (bounded) and stop."""
        self._stopping.set()
        await stop_bounded(self.job.name, self._task, self._config.stop_timeout_ms)
        self._health.ok(self.job.name)

    @property
    def done(self) -> bool:
        """Return True once the task has ended."""
        return self._task is not None and self._task.done()

    async def _run(self) -> None:
        expected = (StateUnavailableError, ConsumerError, OSError, TimeoutError, RuntimeError)
        name = self.job.name

        def failed(exc: Exception) -> None:
            self._health.fail(name, f"{type(exc).__name__}: {exc}")

        attempts = Attempts(name, expected, failed, lambda: self._health.ok(name), restarts_from="position")
        await attempts.run(self._attempt, self._stopping, self._config)

    async def _attempt(self) -> None:
        job, store = self.job, self._store
        await self._hold.wait(self._stopping)  # no attempt begins while a rebalance holds it
        if self._stopping.is_set():
            return
        claim = await store.claim(job.query.name, job.position_name, job.partition, self._owner)
        epoch = claim.epoch
        self.clock.resume(_timestamp(claim.maxts), time.monotonic())
        consumer = new_consumer(
            self._kafka,
            client_id=f"{self._owner}-rekey-{job.query.name}-{job.stream}-{job.partition}",
            fetch_wait_ms=self._config.fetch_wait_ms,
        )
        await start_consumer(consumer)
        try:
            tp = TopicPartition(job.topic, job.partition)
            position = claim.position
            mark = await self._marks.read() if self._marks is not None and position is None else None
            if mark is not None:  # Redis lost the position (restarted empty): resume at the mark
                _log.warning(
                    "%s: no position in Redis; resuming at the marked offset %d", job.name, mark.position
                )
                position = mark.position
                self.clock.resume(_timestamp(mark.maxts), time.monotonic())
                await store.commit(
                    job.query.name, job.position_name, job.partition, epoch, position, mark.maxts
                )
            elif position is None:
                position = (
                    await start_offsets(
                        consumer, [tp], job.query.start, exact_ends=self._kafka.listed_ends_exact
                    )
                )[tp]
                await store.commit(job.query.name, job.position_name, job.partition, epoch, position, None)
                if self._marks is not None:  # at once: a loss right after must not move it to `start`
                    await self._marks.write(RekeyMark(position, None))
            _log.info("%s: claimed (epoch %d), re-keying from offset %d", job.name, epoch, position)
            self._health.ok(job.name)
            consumer.assign([tp])
            consumer.seek(tp, position)
            self._generation = self._producer.begin()  # a fenced producer is replaced between attempts
            await self._loop(consumer, tp, epoch)
        finally:
            await consumer.stop()

    async def _loop(self, consumer: Consumer, tp: TopicPartition, epoch: int) -> None:
        """Re-key batches; up to `MAX_INFLIGHT` of them wait for their acknowledgements at once, and
        the position of the last batch acknowledged (with every earlier one) is committed."""
        job, cfg = self.job, self._config
        marked: float | None = None  # the timestamp of the last marker sent
        marked_at = -math.inf
        getmany = consumer.getmany
        inflight: deque[_Pending] = deque()
        try:
            while not self._stopping.is_set():
                if self._hold.held:  # a rebalance: what is in flight acknowledged and committed, wait
                    await self._settle(inflight, epoch)
                    if not inflight:
                        await self._hold.wait(self._stopping)
                    continue
                batch = await getmany(tp, timeout_ms=cfg.poll_ms, max_records=cfg.max_batch)
                records = batch.get(tp, [])
                await self._commit_acknowledged(inflight, epoch)
                now = time.monotonic()
                clock = self.clock
                if not records and (clock.maxts == marked or now - marked_at < MARK_INTERVAL_MS / 1000):
                    continue
                await self._store.check_owner(
                    job.query.name, job.position_name, job.partition, epoch
                )  # fencing
                delivery = self._producer.delivery(self._generation)
                await self._send_records(delivery, records, now)
                if (
                    clock.maxts is not None
                    and clock.maxts != marked
                    and now - marked_at >= MARK_INTERVAL_MS / 1000
                ):
                    await self._send_marks(delivery, clock.maxts)
                    marked, marked_at = clock.maxts, now
                delivery.seal()
                maxts = orjson.dumps(clock.maxts).decode() if clock.maxts is not None else None
                inflight.append((delivery.future, records[-1].offset + 1 if records else None, maxts))
                self.records += len(records)
                while len(inflight) > MAX_INFLIGHT:
                    acked, _ = await asyncio.wait([inflight[0][0]], timeout=self._producer.ack_timeout_s)
                    if not acked:  # librdkafka answers within its timeouts: never wait for ever
                        raise RuntimeError(f"a batch unacknowledged for {self._producer.ack_timeout_s:.0f} s")
                    await self._commit_acknowledged(inflight, epoch)
        finally:  # stopping (or failing): commit what was acknowledged, within the stop timeout
            with contextlib.suppress(Exception):
                await self._settle(inflight, epoch)
            for future, _, _ in inflight:  # their failures are this attempt's, already reported
                if future.done():
                    future.exception()

    async def _settle(self, inflight: deque[_Pending], epoch: int) -> None:
        """Wait (bounded) for the batches in flight and commit the position they reached."""
        if inflight:
            await asyncio.wait([f for f, _, _ in inflight], timeout=self._config.stop_timeout_ms / 1000)
            await self._commit_acknowledged(inflight, epoch)

    async def _commit_acknowledged(self, inflight: deque[_Pending], epoch: int) -> None:
        """Commit the position after the last batch acknowledged together with every earlier one;
        raise if one failed (the attempt ends and restarts from the committed position)."""
        position: tuple[int, str | None] | None = None
        while inflight and inflight[0][0].done():
            future, next_offset, maxts = inflight.popleft()
            future.result()
            if next_offset is not None:
                position = (next_offset, maxts)
        if position is not None:
            job = self.job
            await self._store.commit(job.query.name, job.position_name, job.partition, epoch, *position)
            if self._marks is not None:
                self._marks.committed(RekeyMark(*position))

    async def _send_records(self, delivery: Delivery, records: list[Any], now: float) -> None:
        job = self.job
        send = self._producer.send
        gen: Header = (HEADER_GEN, job.generation)
        note, attribute, n, s = self.clock.note, job.attribute, job.partitions, job.partition
        for m in records:
            raw: bytes | None = m.value
            kafka_ts: int = m.timestamp
            record = load(raw)
            note(record, kafka_ts, now)
            partition, key = route(record, attribute, n, s)
            headers: list[Header] = [gen, (HEADER_SOURCE, source_header(s, m.offset))]
            while True:
                try:
                    send(delivery, job.internal_topic, partition, raw, key, headers, kafka_ts)
                    break
                except BufferError:
                    await asyncio.sleep(0.005)

    async def _send_marks(self, delivery: Delivery, ts: float) -> None:
        job = self.job
        headers: list[Header] = [(HEADER_GEN, job.generation), (HEADER_MARK, mark_header(job.partition, ts))]
        now_ms = int(time.time() * 1000)
        for q in range(job.partitions):
            while True:
                try:
                    self._producer.send(delivery, job.internal_topic, q, b"", None, headers, now_ms)
                    break
                except BufferError:
                    await asyncio.sleep(0.005)


def _timestamp(stored: str | None) -> float | None:
    """Return a largest timestamp as a position or a mark stores it (JSON), None if none."""
    return float(orjson.loads(stored)) if stored is not None else None
