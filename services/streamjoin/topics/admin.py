"""Create and inspect the declared topics on any Kafka-protocol broker (confluent-kafka's AdminClient).

Creation is idempotent: a topic that exists is reported, not an error, unless its partition count
differs from the declaration (co-partitioned inputs would then silently disagree).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from streamjoin.topics.catalog import TopicSpec

__all__ = [
    "BrokerUnreachableError",
    "TopicOutcome",
    "TopicResult",
    "broker_topics",
    "create_topics",
]

# librdkafka's own log lines (connection refused, ...) go here, silent unless the application
# configures logging; failures reach the caller as exceptions and results anyway.
_LIBRDKAFKA_LOG = logging.getLogger("streamjoin.topics.librdkafka")
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())

TopicOutcome: TypeAlias = Literal["created", "exists", "mismatch", "failed"]


class BrokerUnreachableError(RuntimeError):
    """No broker answered a metadata request in time."""


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


def _admin(bootstrap: str, client_config: Mapping[str, str] | None) -> AdminClient:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "log.connection.close": False,
        "logger": _LIBRDKAFKA_LOG,
        **(client_config or {}),
    }
    return AdminClient(config)


def _partition_counts(admin: AdminClient, bootstrap: str, timeout_ms: int) -> dict[str, int]:
    try:
        metadata = admin.list_topics(timeout=timeout_ms / 1000)
    except KafkaException as exc:
        raise BrokerUnreachableError(
            f"no broker answered at {bootstrap} within {timeout_ms} ms: {exc}"
        ) from exc
    return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}


def broker_topics(
    bootstrap: str, *, timeout_ms: int = 10_000, client_config: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Return every topic on the broker with its partition count.

    `client_config`: more librdkafka properties, the security ones of `client_security.librdkafka_options`.
    """
    return _partition_counts(_admin(bootstrap, client_config), bootstrap, timeout_ms)


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
    admin = _admin(bootstrap, client_config)
    existing = _partition_counts(admin, bootstrap, timeout_ms)
    results: dict[str, TopicResult] = {}
    missing: list[TopicSpec] = []
    for spec in specs:
        if spec.name in existing:
            results[spec.name] = _compare(spec, existing[spec.name])
        else:
            missing.append(spec)
    if missing:
        new_topics = [
            NewTopic(
                spec.name,
                num_partitions=spec.partitions,
                replication_factor=replication_factor
                if replication_factor is not None
                else spec.replication_factor,
                config=dict(spec.config),
            )
            for spec in missing
        ]
        futures = admin.create_topics(
            new_topics, operation_timeout=timeout_ms / 1000, request_timeout=timeout_ms / 1000
        )
        for spec in missing:
            results[spec.name] = _outcome(spec, futures[spec.name], timeout_ms)
    return [results[spec.name] for spec in specs]


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


def _outcome(spec: TopicSpec, future: Future[None], timeout_ms: int) -> TopicResult:
    try:
        future.result(timeout=timeout_ms / 1000)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:  # created concurrently by someone else
            return TopicResult(spec, "exists", None, "created concurrently")
        return TopicResult(spec, "failed", None, f"{error.name()}: {error.str()}")
    return TopicResult(spec, "created", spec.partitions)
