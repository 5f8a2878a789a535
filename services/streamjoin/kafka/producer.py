"""confluent-kafka (librdkafka) producers: the joiner's publisher, the back-fill's sink, the checks.

`new_producer` returns confluent-kafka's own `Producer` (typed by the stubs it ships): the
publisher's hot path calls `produce`/`produce_batch` directly, with no wrapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from confluent_kafka import Producer

from streamjoin.kafka.structs import DeliveredMessage, DeliveryError

__all__ = ["DeliveryCallback", "Producer", "new_producer", "topic_partition_count"]

DeliveryCallback: TypeAlias = Callable[[DeliveryError | None, DeliveredMessage], None]
"""Called from `poll`/`flush` once a record is written (error None) or has failed."""


def new_producer(config: Mapping[str, Any]) -> Producer:
    """Return a producer of librdkafka configuration `config` (`bootstrap.servers`, security, tuning).

    Callables such as `error_cb` and a `logger` may be given in `config`, as librdkafka takes them.
    """
    return Producer(dict(config))


def topic_partition_count(producer: Producer, topic: str, *, timeout_ms: int = 30_000) -> int:
    """Return the partition count of `topic` (0 when it does not exist or its metadata has an error)."""
    metadata = producer.list_topics(topic, timeout=timeout_ms / 1000).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return 0
    return len(metadata.partitions)
