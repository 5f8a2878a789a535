"""Publish outbox records with one idempotent confluent-kafka producer per worker.

librdkafka's idempotent producer keeps each partition's records in order without duplicates across
its own retries; only the last record of each publish carries a delivery callback, whose success
implies every earlier record of that partition was written (an idempotent producer cannot leave a
gap). A poll thread runs the callbacks and hands the results back to the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from streamjoin.joiner.kafka_io import KafkaClients
from streamjoin.joiner.outbox import HEADER_SEQ, OutboxRecord, sequence_header, sequence_prefix

__all__ = ["PublishError", "Publisher"]

_log = logging.getLogger(__name__)
_LIBRDKAFKA_LOG = logging.getLogger("streamjoin.joiner.librdkafka")


class PublishError(RuntimeError):
    """A publish failed (the records may or may not be in the topic): re-run the recovery."""


class Publisher:
    """Send batches of outbox records; each `publish` resolves to the offset of its last record."""

    def __init__(
        self, kafka: KafkaClients, *, linger_ms: int = 2, client_id: str = "streamjoin-joiner"
    ) -> None:
        """Create the producer and start its poll thread."""
        self._producer = Producer(
            {
                **kafka.librdkafka,
                "bootstrap.servers": kafka.bootstrap,
                "client.id": client_id,
                "enable.idempotence": True,
                "linger.ms": linger_ms,
                "batch.size": 1 << 20,
                "queue.buffering.max.messages": 1_000_000,
                "queue.buffering.max.kbytes": 1 << 20,
                "message.max.bytes": 8 << 20,
                "compression.type": "none",
                "logger": _LIBRDKAFKA_LOG,
                "error_cb": self._on_error,
            }
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="streamjoin-publisher", daemon=True)
        self._thread.start()
        self.fatal: str | None = None

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = f"{error.name()}: {error.str()}"
            _log.error("producer fatal error: %s", self.fatal)
        else:
            _log.warning("producer error: %s", error.str())

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.05)

    async def publish(
        self,
        topic: str,
        partition: int,
        first_seq: int,
        records: Sequence[OutboxRecord],
        *,
        query: str,
        source_partition: int,
    ) -> int:
        """Send `records` (numbered from `first_seq`) to `topic`/`partition` in order; return the
        last record's offset."""
        if self.fatal is not None:
            raise PublishError(f"the producer failed: {self.fatal}")
        if not records:
            raise ValueError("nothing to publish")
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()

        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                outcome: object = PublishError(f"publishing to {topic}[{partition}] failed: {err.str()}")
            else:
                outcome = int(msg.offset())
            loop.call_soon_threadsafe(_settle, done, outcome)

        produce = self._producer.produce
        prefix = sequence_prefix(query, source_partition)
        last = len(records) - 1
        for i, (key, value, headers) in enumerate(records):
            seq_header = (HEADER_SEQ, sequence_header(prefix, first_seq + i))
            while True:
                try:
                    produce(
                        topic,
                        value,
                        key,
                        partition=partition,
                        headers=[*headers, seq_header] if headers else [seq_header],
                        on_delivery=delivered if i == last else None,
                    )
                    break
                except BufferError:
                    await asyncio.sleep(0.005)
                except KafkaException as exc:
                    raise PublishError(f"publishing to {topic}[{partition}] failed: {exc}") from exc
        return await done

    async def flush(self, timeout_ms: int) -> int:
        """Wait until every queued record is delivered or `timeout_ms` passes; return how many are left."""
        return int(await asyncio.to_thread(self._producer.flush, timeout_ms / 1000))

    def close(self, timeout_ms: int = 5_000) -> None:
        """Flush (bounded), purge what is left, and stop the poll thread."""
        left = self._producer.flush(timeout_ms / 1000)
        if left:
            _log.warning("%d records not delivered at shutdown (they stay in the outbox)", left)
            self._producer.purge()
        self._stop.set()
        self._thread.join(timeout=1.0)


def _settle(future: asyncio.Future[int], outcome: object) -> None:
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(int(outcome))  # type: ignore[call-overload]
