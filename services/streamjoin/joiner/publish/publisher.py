"""Publish outbox records with one idempotent confluent-kafka producer per worker.

librdkafka's idempotent producer keeps each partition's records in order without duplicates across
its own retries; only the last record of each publish carries a delivery callback, whose success
implies every earlier record of that partition was written (an idempotent producer cannot leave a
gap). A poll thread runs the callbacks and hands the results back to the event loop.

When the operator owns the output partition alone (`seq_on_last_only`), only the last record of a
publish carries the `sj-seq` header and the others go out in one `produce_batch` call (0.8 µs a
record against 1.8 µs for `produce` with a header): recovery counts the query's records after the
last header (`kafka_io.highest_published`). `produce_batch` skips a record it cannot queue and
queues the next ones, which would leave a gap, so it is only used when the queue has room for the
whole publish (at most half the queue) and no record is near the size limit; otherwise records go
one by one. Publishes to one partition never interleave (a lock per partition, held while one waits
for queue room), so sequence numbers reach the partition in order.

Zombie fencing: a publish may carry a `Fence`, awaited under the partition's lock right before its
records are queued; it raises (the operator's checks the owner epoch in Redis) when another worker
claimed the partition meanwhile, so a worker frozen past its session timeout publishes nothing
once resumed. Records already queued when it froze expire instead: `message_timeout_ms` (the
worker passes its session timeout) is shorter than any freeze that lets the partition move, and
librdkafka scans for expired records before it sends after a pause (docs/exactly-once.md).

A producer that must send nothing more (`producer_gaps.must_replace`) is replaced before the next
publish (`ReplaceableProducer`). After records timed out (a broker that stopped answering for longer
than `message.timeout.ms`), librdkafka bumps the idempotent producer's epoch, and the embedded broker
then refuses every later produce of that producer id (`PRODUCER_FENCED`) for good; the same after a
fatal error. What the old producer still holds is purged (the broker would refuse it too); the
operator's retry re-runs the recovery, which reads the output's tail before publishing again, so
nothing is lost or doubled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from operator import itemgetter
from typing import Any

from streamjoin.joiner.publish.outbox import HEADER_SEQ, OutboxRecord, sequence_header, sequence_prefix
from streamjoin.joiner.publish.replaceable_producer import ReplaceableProducer
from streamjoin.kafka import DeliveryError, KafkaClients, ProducerError
from streamjoin.state.outbox import ResultRecords, key_value_columns, largest_value

__all__ = ["Fence", "PublishError", "Publisher"]

_log = logging.getLogger(__name__)
_headers_of = itemgetter(2)
_QUEUE_MESSAGES = 1_000_000
_QUEUE_KBYTES = 2_097_151  # librdkafka's maximum (2 GiB)
_MAX_MESSAGE_BYTES = 8 << 20
_BATCHED_RECORD_BYTES = 1 << 20
"""Publishes with a larger record go one by one: a record over `message.max.bytes` fails alone."""


Fence = Callable[[], Awaitable[None]]
"""Raise if the caller no longer owns what it publishes (awaited right before records are queued)."""


class PublishError(RuntimeError):
    """A publish failed (the records may or may not be in the topic): re-run the recovery."""


class Publisher:
    """Send batches of outbox records; each `publish` resolves to the offset of its last record."""

    def __init__(
        self,
        kafka: KafkaClients,
        *,
        linger_ms: int = 2,
        client_id: str = "streamjoin-joiner",
        queue_messages: int = _QUEUE_MESSAGES,
        message_timeout_ms: int | None = None,
        max_batch_bytes: int = 1 << 20,
    ) -> None:
        """Create the producer and start its poll thread.

        `max_batch_bytes`: the largest record batch it sends. Apache Kafka checks a topic's
        `max.message.bytes` against a whole batch, not a record, so the worker passes its
        `max_record_bytes` (which must be below every output topic's `max.message.bytes`).

        `message_timeout_ms`: how long a record may wait to be delivered before it fails (None:
        librdkafka's 300 s); below the session timeout, records queued by a worker that froze long
        enough to lose its partitions expire rather than reach the topic after it resumes.
        """
        timeout = {} if message_timeout_ms is None else {"message.timeout.ms": message_timeout_ms}
        self._queue_messages = queue_messages
        # Publishes to one partition must not interleave: a publish that waits for queue room
        # (`BufferError`) holds its partition's lock, so a later batch cannot overtake it.
        self._order: dict[tuple[str, int], asyncio.Lock] = {}
        options = {
            "client.id": client_id,
            "linger.ms": linger_ms,
            "batch.size": max_batch_bytes,
            "queue.buffering.max.messages": queue_messages,
            # the message count is the limit: `produce_batch` checks it before queueing
            "queue.buffering.max.kbytes": _QUEUE_KBYTES,
            "message.max.bytes": _MAX_MESSAGE_BYTES,
            "compression.type": "none",
            **timeout,
        }
        self._producer = ReplaceableProducer(kafka, options, role="publisher")
        # (topic, partition, query, source partition) -> the fence of the attempt whose publish failed
        self._failed: dict[tuple[str, int, str, int], Fence] = {}
        self.fatal: str | None = None

    async def publish(
        self,
        topic: str,
        partition: int,
        first_seq: int,
        records: Sequence[OutboxRecord],
        *,
        query: str,
        source_partition: int,
        seq_on_last_only: bool = False,
        fence: Fence | None = None,
    ) -> int:
        """Send `records` (numbered from `first_seq`) to `topic`/`partition` in order; return the
        last record's offset.

        `seq_on_last_only`: the output partition holds no other (query, partition)'s records, so
        only the last record needs its `sj-seq` header (see the module docstring).
        `fence`: awaited right before the records are queued; what it raises ends the publish.
        """
        if self.fatal is not None:
            raise PublishError(f"the producer failed: {self.fatal}")
        if not records:
            raise ValueError("nothing to publish")
        if self._producer.broken:
            self._producer.replace()  # see the module docstring
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()

        key = (topic, partition, query, source_partition)
        generation = self._producer.generation

        def delivered(err: DeliveryError | None, msg: Any) -> None:
            if err is not None:
                self._latch(key, fence)
                self._producer.delivery_failed(err, generation)
                outcome: object = PublishError(f"publishing to {topic}[{partition}] failed: {err.str()}")
            else:
                outcome = int(msg.offset())
            loop.call_soon_threadsafe(_settle, done, outcome)

        prefix = sequence_prefix(query, source_partition)
        lock = self._order.setdefault((topic, partition), asyncio.Lock())
        async with lock:  # uncontended: taken without yielding
            try:
                await _check_fence(fence)
                self._check_no_gap(key, fence)
                await self._send(
                    topic,
                    partition,
                    first_seq,
                    records,
                    prefix,
                    seq_on_last_only=seq_on_last_only,
                    on_delivery=delivered,
                )
            except BaseException:
                self._latch(key, fence)
                raise
        return await done

    def _latch(self, key: tuple[str, int, str, int], fence: Fence | None) -> None:
        """Remember that a publish of the attempt `fence` belongs to failed (see `_check_no_gap`)."""
        if fence is not None:
            self._failed[key] = fence

    def _check_no_gap(self, key: tuple[str, int, str, int], fence: Fence | None) -> None:
        """Refuse a publish when an earlier one of the same attempt (same `fence`) to the same
        partition failed: its records are not in the topic, and this one's would leave a gap that
        recovery, taking the highest sequence number present as "everything before is published",
        would read as published (lost results). A publish of a new attempt (another fence: its
        recovery read the output's tail first) clears the mark."""
        failed = self._failed.get(key)
        if failed is None or fence is None:
            return
        if failed is fence:
            topic, partition, _, _ = key
            raise PublishError(f"an earlier publish to {topic}[{partition}] failed: not publishing after it")
        del self._failed[key]

    async def _send(
        self,
        topic: str,
        partition: int,
        first_seq: int,
        records: Sequence[OutboxRecord],
        prefix: bytes,
        *,
        seq_on_last_only: bool,
        on_delivery: Callable[[DeliveryError | None, Any], None],
    ) -> None:
        """Queue `records` in order; the last one carries `on_delivery`."""
        last = len(records) - 1
        head = 0
        if seq_on_last_only and 0 < last <= self._queue_messages // 2 and self._batchable(records):
            while len(self._producer.current) + last > self._queue_messages:  # only this thread adds records
                await asyncio.sleep(0.005)
            keys, values = key_value_columns(records)
            pairs = zip(keys[:last], values[:last], strict=True)
            batch = [{"key": key, "value": value} for key, value in pairs]
            try:
                queued = self._producer.current.produce_batch(topic, batch, partition=partition)
            except ProducerError as exc:
                raise PublishError(f"publishing to {topic}[{partition}] failed: {exc}") from exc
            if queued != last:
                # Cannot happen with room checked. Records after a skipped one may be queued: a gap
                # that recovery, counting records, would misread. Stop publishing (not ready)
                # rather than lose a result; a restart recovers from the outbox.
                self.fatal = f"produce_batch queued {queued} of {last} records for {topic}[{partition}]"
                _log.error("%s", self.fatal)
                raise PublishError(self.fatal)
            head = last
        produce = self._producer.current.produce
        for i in range(head, last + 1):
            key, value, headers = records[i]
            seq_header = (HEADER_SEQ, sequence_header(prefix, first_seq + i))
            while True:
                try:
                    produce(
                        topic,
                        value,
                        key,
                        partition=partition,
                        headers=[*headers, seq_header] if headers else [seq_header],
                        on_delivery=on_delivery if i == last else None,
                    )
                    break
                except BufferError:
                    await asyncio.sleep(0.005)
                except ProducerError as exc:
                    raise PublishError(f"publishing to {topic}[{partition}] failed: {exc}") from exc

    @staticmethod
    def _batchable(records: Sequence[OutboxRecord]) -> bool:
        """Return True when no record has headers of its own or a value near the size limit (keys,
        the join attribute's JSON, are small next to the 7 MiB of margin)."""
        no_headers = isinstance(records, ResultRecords) or not any(map(_headers_of, records))
        return no_headers and largest_value(records) <= _BATCHED_RECORD_BYTES

    async def flush(self, timeout_ms: int) -> int:
        """Wait until every queued record is delivered or `timeout_ms` passes; return how many are left."""
        return int(await asyncio.to_thread(self._producer.current.flush, timeout_ms / 1000))

    def close(self, timeout_ms: int = 5_000) -> None:
        """Flush (bounded), purge what is left, and stop the poll thread."""
        self._producer.close(timeout_ms, "they stay in the outbox")


async def _check_fence(fence: Fence | None) -> None:
    """Await `fence` (zombie fencing, see the module docstring); what it raises ends the publish."""
    if fence is not None:
        await fence()


def _settle(future: asyncio.Future[int], outcome: object) -> None:
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(int(outcome))  # type: ignore[call-overload]
