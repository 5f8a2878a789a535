"""A keyed log on one Kafka topic: append records and wait for the acknowledgement, read it all back.

The registry's durable log (`streamjoin.registry.log`) is built on it: a compacted topic where the
latest record of a key is the key's value and a record without a value (a tombstone) deletes it.
Appends are acknowledged by every in-sync replica (`acks=all`) before `append` returns, and keep
their order (one request in flight). `read_all` reads every partition from its first retained
record to its end as of the call, so it also works on a broker that never compacts (every version
of a key is read, the last one wins).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamjoin.kafka.connection import KafkaClients
from streamjoin.kafka.consumer import end_offsets, partitions_of, reader, start_consumer
from streamjoin.kafka.producer import new_producer
from streamjoin.kafka.structs import ConsumedRecord, DeliveredMessage, DeliveryError, TopicPartition

__all__ = ["KeyedLog", "LogAppendError", "LogRecord"]


class LogAppendError(RuntimeError):
    """A record was not acknowledged by the broker (the log may or may not hold it)."""


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record of a keyed log: `value` None is a tombstone; `headers` are small strings."""

    key: str
    value: bytes | None
    headers: Mapping[str, str] = field(default_factory=dict)
    offset: int = -1
    partition: int = -1


class KeyedLog:
    """Append to and read back the keyed topic `topic` (see the module docstring)."""

    def __init__(self, kafka: KafkaClients, topic: str, *, timeout_ms: int = 10_000) -> None:
        """Use the brokers of `kafka`; nothing connects before the first call."""
        self.kafka = kafka
        self.topic = topic
        self._timeout_ms = timeout_ms
        self._producer: Any = None

    def _producer_once(self) -> Any:
        if self._producer is None:
            self._producer = new_producer(
                {
                    "bootstrap.servers": self.kafka.bootstrap,
                    "acks": "all",
                    "max.in.flight.requests.per.connection": 1,
                    "linger.ms": 0,
                    "message.timeout.ms": self._timeout_ms,
                    **self.kafka.librdkafka,
                }
            )
        return self._producer

    async def append(self, records: Sequence[LogRecord]) -> None:
        """Write `records` in order and return once the broker acknowledged all of them.

        Raises:
            LogAppendError: a record failed or was not acknowledged within the timeout.
        """
        if records:
            await asyncio.to_thread(self._append, list(records))

    def _append(self, records: list[LogRecord]) -> None:
        producer = self._producer_once()
        errors: list[str] = []

        def done(error: DeliveryError | None, message: DeliveredMessage) -> None:
            if error is not None:
                errors.append(f"{error.name()}: {error.str()}")

        for r in records:
            producer.produce(
                self.topic,
                key=r.key.encode(),
                value=r.value,
                headers=[(k, v.encode()) for k, v in r.headers.items()],
                on_delivery=done,
            )
        left = producer.flush(self._timeout_ms / 1000)
        if errors or left:
            reason = errors[0] if errors else f"{left} record(s) unacknowledged after {self._timeout_ms} ms"
            raise LogAppendError(f"appending to {self.topic!r} failed: {reason}")

    async def read_all(self, *, missing_ok: bool = True) -> list[LogRecord]:
        """Return every retained record of every partition, in offset order per partition.

        A topic that does not exist reads as empty, or raises `LookupError` unless `missing_ok`.
        """
        consumer = reader(self.kafka.bootstrap, options=self.kafka.aiokafka, client_id="streamjoin-log")
        try:
            await start_consumer(consumer)
            parts = await partitions_of(consumer, self.topic)
            if not parts:
                if not missing_ok:
                    raise LookupError(f"the topic {self.topic!r} does not exist")
                return []
            tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
            ends = await end_offsets(
                consumer, tps, exact=self.kafka.listed_ends_exact, timeout_ms=self._timeout_ms
            )
            await consumer.seek_to_beginning(*tps)
            out: list[LogRecord] = []
            deadline = time.monotonic() + self._timeout_ms / 1000
            for tp in tps:
                while await consumer.position(tp) < ends[tp]:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"reading {self.topic!r} took over {self._timeout_ms} ms")
                    batch = await consumer.getmany(tp, timeout_ms=200, max_records=10_000)
                    out += [_record(r) for r in batch.get(tp, []) if r.offset < ends[tp]]
            return out
        finally:
            with contextlib.suppress(Exception):
                await consumer.stop()

    def close(self) -> None:
        """Flush and drop the producer."""
        if self._producer is not None:
            self._producer.flush(self._timeout_ms / 1000)
            self._producer = None


def _record(r: ConsumedRecord) -> LogRecord:
    headers = {k: v.decode(errors="replace") for k, v in r.headers}
    key = r.key.decode(errors="replace") if r.key is not None else ""
    return LogRecord(key=key, value=r.value, headers=headers, offset=r.offset, partition=r.partition)
