"""Create and inspect the declared topics on any Kafka-protocol broker (through `streamjoin.kafka.Admin`).

Creation is idempotent: a topic that exists is reported, not an error, unless its partition count
differs from the declaration (co-partitioned inputs would then silently disagree).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from streamjoin.kafka import Admin, BrokerUnreachableError, Created
from streamjoin.topics.catalog import TopicSpec

__all__ = [
    "BrokerUnreachableError",
    "TopicOutcome",
    "TopicResult",
    "broker_topics",
    "create_topics",
]

TopicOutcome: TypeAlias = Literal["created", "exists", "mismatch", "failed"]


@dataclass(frozen=True, slots=True)
class TopicResult:
    """What `create_topics` did for one declared topic."""

    spec: TopicSpec
    outcome: TopicOutcome
    partitions: int | None
    """Partition count on the broker, when known."""
    message: str = ""

    @property
    def ok(self) -> bool:
        """Whether the topic now exists as declared."""
        return self.outcome in ("created", "exists")


def broker_topics(
    bootstrap: str, *, timeout_ms: int = 10_000, client_config: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Return every topic on the broker with its partition count.

    `client_config`: more librdkafka properties, the security ones of `client_security.librdkafka_options`.
    """
    return Admin(bootstrap, client_config=client_config).topics(timeout_ms=timeout_ms)


def create_topics(
    bootstrap: str,
    specs: Iterable[TopicSpec],
    *,
    replication_factor: int | None = None,
    timeout_ms: int = 30_000,
    client_config: Mapping[str, str] | None = None,
) -> list[TopicResult]:
    """Create every topic of `specs` that does not exist; report each one.

    Args:
        bootstrap: the broker's `host:port[,host:port]`.
        specs: the declared topics (e.g. a `TopicCatalog`).
        replication_factor: overrides every declaration's replication factor (-1: broker default).
        timeout_ms: bound on each admin request.
        client_config: more librdkafka properties of the admin client, e.g. the security ones of
            `client_security.librdkafka_options`.

    Raises:
        BrokerUnreachableError: the broker did not answer.
    """
    specs = list(specs)
    admin = Admin(bootstrap, client_config=client_config)
    existing = admin.topics(timeout_ms=timeout_ms)
    missing = [spec for spec in specs if spec.name not in existing]
    created = admin.create_topics(missing, replication_factor=replication_factor, timeout_ms=timeout_ms)
    return [
        _compare(spec, existing[spec.name]) if spec.name in existing else _result(spec, created[spec.name])
        for spec in specs
    ]


def _compare(spec: TopicSpec, partitions: int) -> TopicResult:
    if partitions == spec.partitions:
        return TopicResult(spec, "exists", partitions)
    return TopicResult(
        spec,
        "mismatch",
        partitions,
        f"exists with {partitions} partitions, declared {spec.partitions} "
        "(created by auto-creation or an older declaration? delete it or change the declaration)",
    )


def _result(spec: TopicSpec, created: Created) -> TopicResult:
    partitions = spec.partitions if created.outcome == "created" else None
    return TopicResult(spec, created.outcome, partitions, created.message)
