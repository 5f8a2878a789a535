"""Create a query's output, dead-letter and internal repartition topics when they do not exist yet,
and delete the internal ones with the query.

The output topic gets the query's partition count N (its partitioning plan), so result partition p
comes from operator partition p (an existing topic keeps its own count; records then go to
`p % count`). Internal topics (docs/joiner.md, "Re-keyed inputs") have N partitions too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from streamjoin.kafka import Admin, KafkaClients
from streamjoin.topics import TopicSpec, broker_topics, create_topics

__all__ = [
    "ANCHOR_TOPIC",
    "delete_internal_topics",
    "ensure_anchor_topic",
    "ensure_internal_topics",
    "ensure_output_topics",
]

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


def ensure_internal_topics(kafka: KafkaClients, names: Sequence[str], partitions: int) -> str | None:
    """Create a query's internal repartition topics with `partitions` partitions if missing; return
    a problem (an existing one with another count, left by an earlier definition) or None."""
    if not names:
        return None
    existing = broker_topics(kafka.bootstrap, client_config=kafka.librdkafka)
    missing = [TopicSpec(name, "internal", partitions) for name in names if name not in existing]
    if missing:
        for result in create_topics(kafka.bootstrap, missing, client_config=kafka.librdkafka):
            if not result.ok:
                raise RuntimeError(f"creating topic {result.spec.name} failed: {result.message}")
            if result.outcome == "created":
                _log.info("created internal topic %s with %d partitions", result.spec.name, partitions)
    deadline = time.monotonic() + _VISIBLE_WITHIN_S
    while any(name not in existing for name in names):
        if time.monotonic() > deadline:
            raise RuntimeError(f"internal topics {list(names)} not visible in the broker's metadata")
        time.sleep(0.1)
        existing = broker_topics(kafka.bootstrap, client_config=kafka.librdkafka)
    wrong = {name: existing[name] for name in names if existing[name] != partitions}
    if wrong:
        return (
            f"internal topic(s) {wrong} do not have the query's {partitions} partitions "
            "(left by an earlier definition): they are deleted and created again"
        )
    return None


def delete_internal_topics(kafka: KafkaClients, names: Sequence[str]) -> None:
    """Delete a deleted query's internal topics (idempotent: a missing one is no error)."""
    if not names:
        return
    errors = Admin(kafka.bootstrap, client_config=kafka.librdkafka).delete_topics(names)
    for name, error in errors.items():
        if error is None:
            _log.info("deleted internal topic %s", name)
        elif "UNKNOWN_TOPIC" not in error.upper() and "does not exist" not in error:
            raise RuntimeError(f"deleting topic {name} failed: {error}")
