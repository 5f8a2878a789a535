"""The idempotent producer every repartitioner of a worker writes its internal topics with.

One librdkafka producer per worker (made when the worker first runs a repartitioner): idempotent, so
each internal partition receives every repartitioner's records in the order they were produced and
without duplicates of its own retries; records expire after `message_timeout_ms` (the session
timeout), so a worker frozen long enough to lose its source partitions cannot write them later.

A producer the broker fenced (`PRODUCER_FENCED` after records timed out, as the `publisher` module
explains), one that stopped (a fatal error: `enable.gapless.guarantee`) or one with a record timed
out (Kafka takes the later records after librdkafka bumps the epoch: `producer_gaps`) must send
nothing more, so its queue is purged at once and it is replaced, but only for attempts that begin after:
each repartitioner attempt takes the producer's `generation` when it begins (`begin`), and every
batch of an attempt of an earlier generation is refused (the attempt ends and restarts from its
committed position). So no batch after a failed one of the same attempt is ever written: the
operators' duplicate filter assumes a source partition's records arrive in source-offset order.
A `Delivery` counts the acknowledgements of one batch and resolves once all arrived (or one failed).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

from streamjoin.joiner.publish.replaceable_producer import ReplaceableProducer
from streamjoin.kafka import DeliveryError, KafkaClients, ProducerError

__all__ = ["Delivery", "Header", "RekeyProducer"]


Header = tuple[str, str | bytes | None]

ACK_SLACK_S = 60.0
"""Beyond the message timeout, how long a batch's acknowledgements may take (a request in flight
fails after librdkafka's request timeout, 30 s, not the message timeout)."""


class Delivery:
    """The acknowledgements of one batch of records: `future` resolves when all are written."""

    __slots__ = ("_left", "_lock", "_loop", "future", "generation")

    def __init__(self, loop: asyncio.AbstractEventLoop, generation: int = 0) -> None:
        self._loop = loop
        self.generation = generation
        """The producer generation of the attempt the batch belongs to (`RekeyProducer.begin`)."""
        self._lock = threading.Lock()  # the poll thread acknowledges, the loop counts and seals
        self._left = 1  # the batch itself, released by `seal`
        self.future: asyncio.Future[None] = loop.create_future()

    def expect(self, count: int = 1) -> None:
        """Count `count` more records of the batch (before they are queued: -1 takes one back)."""
        with self._lock:
            self._left += count

    def seal(self) -> None:
        """Every record of the batch is queued."""
        self.done(None, None)

    def done(self, error: DeliveryError | None, _msg: Any) -> None:
        """librdkafka's delivery callback (poll thread); also `seal`'s (loop thread)."""
        if error is not None:
            self._loop.call_soon_threadsafe(_fail, self.future, f"{error.name()}: {error.str()}")
            return
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            self._loop.call_soon_threadsafe(_succeed, self.future)


class RekeyProducer:
    """Produce re-keyed records and markers; `close` flushes (bounded) and stops the poll thread."""

    def __init__(
        self, kafka: KafkaClients, *, client_id: str, message_timeout_ms: int, linger_ms: int = 5
    ) -> None:
        options = {
            "client.id": client_id,
            # A write to a deleted query's internal topic fails; it never recreates the topic.
            "allow.auto.create.topics": False,
            # An internal topic created again with more partitions is seen within seconds.
            "topic.metadata.refresh.interval.ms": 5_000,
            "linger.ms": linger_ms,
            "batch.size": 1 << 20,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "none",
            "message.timeout.ms": message_timeout_ms,
        }
        self._producer = ReplaceableProducer(kafka, options, role="rekey-producer")
        self.ack_timeout_s = message_timeout_ms / 1000 + ACK_SLACK_S
        """How long a batch may wait for its acknowledgements before its attempt gives up."""

    def begin(self) -> int:
        """An attempt begins: replace the producer if the broker fenced it; return the generation
        the attempt's batches must carry (`Delivery.generation`)."""
        if self._producer.broken:
            self._producer.replace()
        return self._producer.generation

    def delivery(self, generation: int) -> Delivery:
        """Return the `Delivery` of a new batch of an attempt of `generation` (see `send`)."""
        return Delivery(asyncio.get_running_loop(), generation)

    def send(
        self,
        delivery: Delivery,
        topic: str,
        partition: int,
        value: bytes | None,
        key: bytes | None,
        headers: list[Header],
        timestamp: int,
    ) -> None:
        """Queue one record of `delivery`'s batch; raise `BufferError` while librdkafka's queue is
        full (nothing queued: the caller waits and sends it again); raise `RuntimeError` while the
        producer is fenced or if it was replaced since `delivery`'s attempt began (the attempt ends)."""
        if self._producer.broken or delivery.generation != self._producer.generation:
            raise RuntimeError("the re-keying producer was fenced: the attempt restarts from its position")
        delivery.expect()
        try:
            self._producer.current.produce(
                topic,
                value,
                key,
                partition=partition,
                headers=headers,
                timestamp=timestamp,
                on_delivery=functools.partial(self._delivered, delivery),
            )
        except BufferError:
            delivery.expect(-1)
            raise
        except ProducerError as exc:
            delivery.expect(-1)
            raise RuntimeError(f"producing to {topic}[{partition}] failed: {exc}") from exc

    def _delivered(self, delivery: Delivery, error: DeliveryError | None, msg: Any) -> None:
        if error is not None:
            self._producer.delivery_failed(error, delivery.generation)
        delivery.done(error, msg)

    def close(self, timeout_ms: int = 2_000) -> None:
        """Flush (bounded), drop what is left (the sources are re-read from their positions)."""
        self._producer.close(timeout_ms, "re-keyed records: re-read later")


def _succeed(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _fail(future: asyncio.Future[None], reason: str) -> None:
    if not future.done():
        future.set_exception(RuntimeError(f"re-keyed records not written: {reason}"))
