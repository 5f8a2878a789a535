"""Kafka records as the joiner's consumers hand them over (aiokafka's own `ConsumerRecord`), for the
unit tests that feed the joiner's batch code without a broker; partitions are aiokafka's
`TopicPartition`."""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka import ConsumerRecord, TopicPartition

__all__ = ["ConsumerRecord", "TopicPartition", "consumer_record"]


def consumer_record(
    topic: str,
    partition: int,
    offset: int,
    value: bytes | None,
    *,
    timestamp: int = 0,
    key: bytes | None = None,
    headers: Sequence[tuple[str, bytes]] = (),
) -> ConsumerRecord[bytes, bytes]:
    """Return the record at `offset` of `topic`/`partition` as aiokafka's consumer returns it."""
    return ConsumerRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        timestamp=timestamp,
        timestamp_type=0,  # CreateTime
        key=key,
        value=value,
        checksum=None,
        serialized_key_size=len(key) if key is not None else -1,
        serialized_value_size=len(value) if value is not None else -1,
        headers=list(headers),
    )
