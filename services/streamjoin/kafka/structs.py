"""The typed records the Kafka clients hand back: partitions, consumed records, errors.

confluent-kafka ships type stubs: its error (`DeliveryError`, the value a delivery or error callback
gets; `ProducerError`, the exception a producer or admin call raises with a `DeliveryError` in
`args[0]`) and message (`DeliveredMessage`) classes are re-exported under these names.

aiokafka ships no type information, so its objects would reach the rest of the code as `Any`. At
run time `TopicPartition`, `OffsetAndTimestamp` and `ConsumerError` ARE aiokafka's classes (no
wrapping, no copying on the hot path); for the type checker they are the small declarations below,
which list what aiokafka's classes provide. `ConsumedRecord` describes a fetched record.

>>> TopicPartition("orders", 3).partition
3
>>> TopicPartition("orders", 3) == ("orders", 3)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from confluent_kafka import KafkaError as DeliveryError
from confluent_kafka import KafkaException as ProducerError
from confluent_kafka import Message as DeliveredMessage

__all__ = [
    "ConsumedRecord",
    "ConsumerError",
    "DeliveredMessage",
    "DeliveryError",
    "OffsetAndTimestamp",
    "ProducerError",
    "TopicPartition",
]

if TYPE_CHECKING:

    class TopicPartition(NamedTuple):
        """One partition of one topic (aiokafka's `TopicPartition`)."""

        topic: str
        partition: int

    class OffsetAndTimestamp(NamedTuple):
        """The first offset at or after a timestamp, and that record's timestamp (ms)."""

        offset: int
        timestamp: int

    class ConsumerError(RuntimeError):
        """A failure of a consumer request (aiokafka's `KafkaError`, base of its errors)."""

else:
    from aiokafka.errors import KafkaError as ConsumerError
    from aiokafka.structs import OffsetAndTimestamp, TopicPartition


class ConsumedRecord(Protocol):
    """A record read by a consumer (aiokafka's `ConsumerRecord`)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]]
