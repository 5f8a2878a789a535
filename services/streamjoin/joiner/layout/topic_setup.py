"""Create a query's output, dead-letter and internal repartition topics when they do not exist yet
(`repartition.cleanup` deletes the internal ones a query no longer uses).

The output topic gets the query's partition count N (its partitioning plan), so result partition p
comes from operator partition p (an existing topic keeps its own count; records then go to
`p % count`). Internal topics (docs/joiner.md, "Re-keyed inputs") have N partitions too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from streamjoin.kafka import KafkaClients
from streamjoin.topics import SLOTS_TOPIC, TopicSpec, broker_topics, create_topics

__all__ = [
    "ensure_slots_topic",
    "ensure_internal_topics",
    "ensure_output_topics",
]

_log = logging.getLogger(__name__)
_VISIBLE_WITHIN_S = 10.0


def ensure_slots_topic(kafka: KafkaClients, slots: int) -> int | str:
    """Create `SLOTS_TOPIC` with `slots` partitions if it is missing and wait until the broker lists
    it; return `slots`, or why the worker must not start (the topic has another count).

    An existing topic is never altered: every worker of the group must map queries onto the same
    slots, and a new count moves nearly every operator (docs/joiner.md, "Slots").
    """
    existing = _create_visible(kafka, [TopicSpec(SLOTS_TOPIC, "internal", slots)])[SLOTS_TOPIC]
    if existing != slots:
        return (
            f"topic {SLOTS_TOPIC} has {existing} partitions but this worker's slot count "
            f"(STREAMJOIN_JOINER_SLOTS) is {slots}: set it to {existing}, or delete the topic while no "
            "joiner runs (it holds nothing) to use another count"
        )
    return slots


def ensure_output_topics(
    kafka: KafkaClients, output: str, dead_letter: str, partitions: int
) -> tuple[int, int]:
    """Create `output` and `dead_letter` if missing; return their partition counts."""
    specs = [
        TopicSpec(name, "output" if name == output else "dead-letter", partitions)
        for name in dict.fromkeys((output, dead_letter))
    ]
    existing = _create_visible(kafka, specs)
    return existing[output], existing[dead_letter]


def ensure_internal_topics(kafka: KafkaClients, names: Sequence[str], partitions: int) -> str | None:
    """Create a query's internal repartition topics with `partitions` partitions if missing; return
    a problem (an existing one with another count, left by an earlier definition) or None."""
    if not names:
        return None
    existing = _create_visible(kafka, [TopicSpec(name, "internal", partitions) for name in names])
    wrong = {name: existing[name] for name in names if existing[name] != partitions}
    if wrong:
        return (
            f"internal topic(s) {wrong} do not have the query's {partitions} partitions "
            "(left by an earlier definition): they are deleted and created again"
        )
    return None


def _create_visible(kafka: KafkaClients, specs: Sequence[TopicSpec]) -> dict[str, int]:
    """Create each topic of `specs` that is missing and wait until the broker lists every one of
    them; return every topic on the broker with its partition count.

    A topic just created (here or by another worker) takes a moment to appear in the metadata.
    """
    existing = broker_topics(kafka.bootstrap, client_config=kafka.librdkafka)
    missing = [spec for spec in specs if spec.name not in existing]
    if missing:
        for result in create_topics(kafka.bootstrap, missing, client_config=kafka.librdkafka):
            if not result.ok:
                raise RuntimeError(f"creating topic {result.spec.name} failed: {result.message}")
            if result.outcome == "created":
                spec = result.spec
                _log.info("created %s topic %s with %d partitions", spec.role, spec.name, spec.partitions)
    names = [spec.name for spec in specs]
    deadline = time.monotonic() + _VISIBLE_WITHIN_S
    while any(name not in existing for name in names):
        if time.monotonic() > deadline:
            raise RuntimeError(f"topics {names} not visible in the broker's metadata")
        time.sleep(0.1)
        existing = broker_topics(kafka.bootstrap, client_config=kafka.librdkafka)
    return existing
