"""Create a query's output and dead-letter topics when they do not exist yet.

The output topic gets the input's partition count, so result partition p comes from input
partition p (an existing topic keeps its own count; records then go to `p % count`).
"""

from __future__ import annotations

import logging
import time

from streamjoin.kafka import KafkaClients
from streamjoin.topics import TopicSpec, broker_topics, create_topics

__all__ = ["ANCHOR_TOPIC", "ensure_anchor_topic", "ensure_output_topics"]

_log = logging.getLogger(__name__)
_VISIBLE_WITHIN_S = 10.0

ANCHOR_TOPIC = "streamjoin.joiner"
"""Internal topic every joiner subscribes to (never written), so that its consumer group has a
subscription before any query is registered: aiokafka refuses an empty one, and Faust only finishes
starting after the group's first rebalance."""


def ensure_anchor_topic(kafka: KafkaClients) -> None:
    """Create `ANCHOR_TOPIC` (1 partition) if it is missing and wait until the broker lists it."""
    existing = broker_topics(kafka.bootstrap, client_config=kafka.librdkafka)
    if ANCHOR_TOPIC not in existing:
        for result in create_topics(
            kafka.bootstrap, [TopicSpec(ANCHOR_TOPIC, "internal", 1)], client_config=kafka.librdkafka
        ):
            if not result.ok:
                raise RuntimeError(f"creating topic {ANCHOR_TOPIC} failed: {result.message}")
            if result.outcome == "created":
                _log.info("created topic %s", ANCHOR_TOPIC)
    deadline = time.monotonic() + _VISIBLE_WITHIN_S
    while ANCHOR_TOPIC not in existing:
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {ANCHOR_TOPIC} not visible in the broker's metadata")
        time.sleep(0.1)
        existing = broker_topics(kafka.bootstrap, client_config=kafka.librdkafka)


def ensure_output_topics(
    kafka: KafkaClients, output: str, dead_letter: str, partitions: int
) -> tuple[int, int]:
    """Create `output` and `dead_letter` if missing; return their partition counts."""
    existing = broker_topics(kafka.bootstrap, client_config=kafka.librdkafka)
    missing = [
        TopicSpec(name, "output" if name == output else "dead-letter", partitions)
        for name in dict.fromkeys((output, dead_letter))
        if name not in existing
    ]
    if missing:
        for result in create_topics(kafka.bootstrap, missing, client_config=kafka.librdkafka):
            if not result.ok:
                raise RuntimeError(f"creating topic {result.spec.name} failed: {result.message}")
            if result.outcome == "created":
                _log.info("created topic %s with %d partitions", result.spec.name, partitions)
    # A topic just created (here or by another worker) takes a moment to appear in the metadata.
    deadline = time.monotonic() + _VISIBLE_WITHIN_S
    while output not in existing or dead_letter not in existing:
        if time.monotonic() > deadline:
            raise RuntimeError(f"topics {output} and {dead_letter} not visible in the broker's metadata")
        time.sleep(0.1)
        existing = broker_topics(kafka.bootstrap, client_config=kafka.librdkafka)
    return existing[output], existing[dead_letter]
