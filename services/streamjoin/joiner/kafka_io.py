"""The operators' Kafka reads through aiokafka: consumers, start positions, and the output tail.

Operators read their input partitions with their own consumer (no consumer group: the offsets live
in Redis, and Faust's group only decides who owns which partition). aiokafka reads about 250k
records/s from the embedded broker, against about 9k through Faust's stream layer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from streamjoin.client_security import aiokafka_options, librdkafka_options
from streamjoin.joiner.outbox import HEADER_SEQ, parse_sequence_header
from streamjoin.query.model import StartPosition
from streamjoin.settings import Settings
from streamjoin.topics import broker_topics

__all__ = [
    "KafkaClients",
    "end_offsets",
    "highest_published",
    "new_consumer",
    "partition_counts",
    "start_consumer",
    "start_offsets",
]


@dataclass(frozen=True, slots=True)
class KafkaClients:
    """Where the brokers are and how every client of a worker connects to them (TLS, SASL).

    Built once per worker: `aiokafka_options` loads the TLS files into an `ssl.SSLContext`.
    """

    bootstrap: str
    aiokafka: Mapping[str, Any] = field(default_factory=dict)
    """Extra `AIOKafkaConsumer` keyword arguments (`streamjoin.client_security.aiokafka_options`)."""
    librdkafka: Mapping[str, str] = field(default_factory=dict)
    """Extra confluent-kafka configuration (`streamjoin.client_security.librdkafka_options`)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> KafkaClients:
        """Return the connection of `settings` (`STREAMJOIN_KAFKA_*`)."""
        return cls(settings.kafka_bootstrap, aiokafka_options(settings), librdkafka_options(settings))


def new_consumer(kafka: KafkaClients, *, client_id: str, fetch_wait_ms: int = 10) -> AIOKafkaConsumer:
    """Return an unstarted group-less consumer tuned for large batches and short waits."""
    return AIOKafkaConsumer(
        **kafka.aiokafka,
        bootstrap_servers=kafka.bootstrap,
        client_id=client_id,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=fetch_wait_ms,
        fetch_max_bytes=64 << 20,
        max_partition_fetch_bytes=1 << 20,
        request_timeout_ms=30_000,
        metadata_max_age_ms=5_000,
    )


async def start_consumer(consumer: AIOKafkaConsumer) -> None:
    """Start `consumer` and let its background tasks take their first step.

    A group-less aiokafka consumer stopped before its coordinator's first task ran raises
    `CancelledError` out of `stop()` (it awaits a task cancelled before it started), which ends the
    caller's task as if it had been cancelled: an operator that had nothing to recover was restarted
    every second that way.
    """
    await consumer.start()
    await asyncio.sleep(0)


async def partition_counts(
    consumer: AIOKafkaConsumer, kafka: KafkaClients, topics: Iterable[str]
) -> dict[str, int]:
    """Return the partition count of each topic that exists (missing topics are left out).

    The consumer's cached metadata answers for the topics it knows; the others are looked up in one
    metadata request of an admin client (`AIOKafkaConsumer` has no public call that refreshes its
    cache).
    """
    counts: dict[str, int] = {}
    unknown: list[str] = []
    for topic in topics:
        parts = consumer.partitions_for_topic(topic)
        if parts is None:
            unknown.append(topic)
        elif parts:
            counts[topic] = len(parts)
    if unknown:
        existing = await asyncio.to_thread(broker_topics, kafka.bootstrap, client_config=kafka.librdkafka)
        counts.update({t: existing[t] for t in unknown if existing.get(t)})
    return counts


async def end_offsets(
    consumer: AIOKafkaConsumer, tps: Iterable[TopicPartition], *, timeout_ms: int = 10_000
) -> dict[TopicPartition, int]:
    """Return the high watermark (offset of the next record) of each partition.

    The embedded broker answers ListOffsets(latest) with the base offset of the partition's last
    record batch, not its end, so the answer is only a lower bound: the partitions are fetched from
    there once and the high watermark of the fetch response is used. Leaves `consumer` assigned to
    `tps`.
    """
    tps = list(tps)
    if not tps:
        return {}
    listed = await consumer.end_offsets(tps)
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, listed[tp])
    deadline = time.monotonic() + timeout_ms / 1000
    while any(consumer.highwater(tp) is None for tp in tps):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no fetch response for {tps} within {timeout_ms} ms")
        await consumer.getmany(*tps, timeout_ms=100, max_records=1)
    return {tp: max(int(consumer.highwater(tp) or 0), listed[tp]) for tp in tps}


async def start_offsets(
    consumer: AIOKafkaConsumer, tps: Iterable[TopicPartition], start: StartPosition
) -> dict[TopicPartition, int]:
    """Return where a new query starts reading each partition: `latest`, `earliest` or a timestamp (ms)."""
    tps = list(tps)
    if start == "latest":
        return await end_offsets(consumer, tps)
    if start == "earliest":
        return dict(await consumer.beginning_offsets(tps))
    found = await consumer.offsets_for_times({tp: int(start) for tp in tps})
    missing = [tp for tp in tps if found.get(tp) is None]
    ends = await end_offsets(consumer, missing)
    return {tp: (ends[tp] if tp in ends else found[tp].offset) for tp in tps}


async def highest_published(
    consumer: AIOKafkaConsumer,
    tp: TopicPartition,
    *,
    query: str,
    partition: int,
    from_offset: int,
    acked: int,
    unmarked_prefix: bytes | None = None,
    timeout_ms: int = 30_000,
) -> tuple[int, int]:
    """Return (highest sequence number published, its offset) of (query, partition) in `tp`.

    Reads `tp` from `from_offset` (where the records numbered after `acked` start) to its current
    end; (acked, -1) when none of those records is ours. With `unmarked_prefix` the partition is
    the operator's alone and only the last record of each publish carries `sj-seq`: a record
    without it whose value starts with the prefix (`{"query":<name>,`) is the one after the
    previous record of ours (an idempotent producer writes a partition in order, without gaps).
    """
    end = (await end_offsets(consumer, [tp]))[tp]
    best, best_offset = acked, -1
    if from_offset >= end:
        return best, best_offset
    consumer.seek(tp, max(from_offset, 0))
    ours = query.encode()
    deadline = time.monotonic() + timeout_ms / 1000
    while await consumer.position(tp) < end:
        if time.monotonic() > deadline:
            raise TimeoutError(f"reading the tail of {tp.topic}[{tp.partition}] took over {timeout_ms} ms")
        batch = await consumer.getmany(tp, timeout_ms=500, max_records=10_000)
        for message in batch.get(tp, ()):
            marked = False
            for name, value in message.headers or ():
                if name != HEADER_SEQ:
                    continue
                marked = True
                origin = parse_sequence_header(value)
                if origin is not None and origin[:2] == (ours, partition):
                    best, best_offset = origin[2], message.offset
            if (
                not marked
                and unmarked_prefix is not None
                and message.value is not None
                and message.value.startswith(unmarked_prefix)
            ):
                best, best_offset = best + 1, message.offset
    return best, best_offset
