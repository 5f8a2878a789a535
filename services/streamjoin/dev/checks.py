"""Smoke checks of a running stack: one record through the broker and one value through Redis.

The broker check produces with confluent-kafka and consumes with aiokafka, the two clients the
product uses for those directions (librdkafka's consumer is slow against the embedded broker).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

from streamjoin.dev.resp import RespConnection
from streamjoin.kafka import DeliveredMessage, DeliveryError, TopicPartition, new_producer, reader

__all__ = ["BrokerRoundTrip", "RedisRoundTrip", "broker_round_trip", "redis_round_trip"]

_LIBRDKAFKA_LOG = logging.getLogger("streamjoin.dev.librdkafka")
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())


@dataclass(frozen=True, slots=True)
class BrokerRoundTrip:
    """Where the check record landed and how long produce-to-consume took."""

    topic: str
    partition: int
    offset: int
    latency_ms: int


@dataclass(frozen=True, slots=True)
class RedisRoundTrip:
    """The key written and read back, and how long it took."""

    key: str
    latency_ms: int


def broker_round_trip(bootstrap: str, topic: str, *, timeout_ms: int = 15_000) -> BrokerRoundTrip:
    """Produce one record to `topic` and consume it back; raise `RuntimeError` if it does not arrive."""
    return asyncio.run(_broker_round_trip(bootstrap, topic, timeout_ms))


async def _broker_round_trip(bootstrap: str, topic: str, timeout_ms: int) -> BrokerRoundTrip:
    started = time.monotonic()
    check_id = uuid.uuid4().hex
    partition, offset = _produce_one(bootstrap, topic, check_id, timeout_ms)
    consumer = reader(bootstrap)
    await consumer.start()
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = started + timeout_ms / 1000
        while time.monotonic() < deadline:
            batches = await consumer.getmany(tp, timeout_ms=200)
            for record in batches.get(tp, []):
                if record.key == check_id.encode():
                    latency_ms = int((time.monotonic() - started) * 1000)
                    return BrokerRoundTrip(topic, partition, record.offset, latency_ms)
    finally:
        await consumer.stop()
    raise RuntimeError(
        f"the check record sent to {topic}[{partition}]@{offset} did not come back in {timeout_ms} ms"
    )


def _produce_one(bootstrap: str, topic: str, check_id: str, timeout_ms: int) -> tuple[int, int]:
    # Not idempotent: librdkafka's idempotent producer waits about 1 s before its first delivery.
    producer = new_producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "logger": _LIBRDKAFKA_LOG}
    )
    delivered: list[tuple[DeliveryError | None, DeliveredMessage]] = []
    value = json.dumps({"check": check_id, "ts": int(time.time() * 1000)}).encode()
    producer.produce(
        topic, key=check_id.encode(), value=value, on_delivery=lambda e, m: delivered.append((e, m))
    )
    left = producer.flush(timeout_ms / 1000)
    if left or not delivered:
        raise RuntimeError(f"the check record to {topic} was not acknowledged within {timeout_ms} ms")
    error, message = delivered[0]
    partition, offset = message.partition(), message.offset()
    if error is not None or partition is None or offset is None:
        raise RuntimeError(f"producing the check record to {topic} failed: {error}")
    return partition, offset


def redis_round_trip(redis_url: str, *, timeout_ms: int = 5_000) -> RedisRoundTrip:
    """Write a value to Redis, read it back and delete it; raise `RuntimeError` if it differs."""
    started = time.monotonic()
    parts = urlsplit(redis_url)
    key = f"streamjoin:check:{uuid.uuid4().hex}"
    value = uuid.uuid4().hex.encode()
    with RespConnection(parts.hostname or "127.0.0.1", parts.port or 6379, timeout_ms=timeout_ms) as conn:
        if parts.password:
            conn.call("AUTH", *([parts.username] if parts.username else []), parts.password)
        database = parts.path.lstrip("/")
        if database:
            conn.call("SELECT", database)
        conn.call("SET", key, value, "PX", 60_000)
        read = conn.call("GET", key)
        conn.call("DEL", key)
    if read != value:
        raise RuntimeError(f"Redis at {redis_url} returned {read!r} for {key}, expected {value!r}")
    return RedisRoundTrip(key, int((time.monotonic() - started) * 1000))
