"""Topic administration through confluent-kafka's `AdminClient`: list, create and delete topics,
and grant ACLs, and say where their replicas are (`replicas`) and what their settings are
(`topic_configs`).

`Admin` answers in plain types (topic name → partition count, topic name → outcome); what a topic
should look like is decided by the caller (`streamjoin.topics` compares with the declarations).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

# confluent-kafka's admin package re-exports these without declaring them to type checkers.
from confluent_kafka.admin._acl import AclBinding, AclOperation, AclPermissionType
from confluent_kafka.admin._config import ConfigResource  # the package re-exports it without `__all__`
from confluent_kafka.admin._resource import ResourcePatternType
from confluent_kafka.admin._resource import ResourceType as KafkaResourceType
from confluent_kafka.cimpl import NewTopic

from streamjoin.kafka.acls import AclGrant

__all__ = [
    "Admin",
    "BrokerUnreachableError",
    "CreateOutcome",
    "Created",
    "NewTopicRequest",
    "PartitionReplicas",
]

# librdkafka's own log lines (connection refused, ...) go here, silent unless the application
# configures logging; failures reach the caller as exceptions and results anyway.
_LIBRDKAFKA_LOG = logging.getLogger("streamjoin.kafka.librdkafka")
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())

CreateOutcome: TypeAlias = Literal["created", "exists", "failed"]


class BrokerUnreachableError(RuntimeError):
    """No broker answered a metadata request in time."""


class NewTopicRequest(Protocol):
    """What `Admin.create_topics` needs to know of a topic (a `streamjoin.topics.TopicSpec` is one)."""

    @property
    def name(self) -> str:
        """The topic's name."""
        ...

    @property
    def partitions(self) -> int:
        """Its partition count."""
        ...

    @property
    def replication_factor(self) -> int:
        """Its replication factor (-1: the broker's default)."""
        ...

    @property
    def config(self) -> Mapping[str, str]:
        """Its topic configuration (`retention.ms`, ...)."""
        ...


@dataclass(frozen=True, slots=True)
class Created:
    """What the broker answered to the creation of one topic."""

    outcome: CreateOutcome
    message: str = ""


@dataclass(frozen=True, slots=True)
class PartitionReplicas:
    """Where one partition's replicas are: broker ids of its leader (-1: none), replicas and in-sync ones."""

    leader: int
    replicas: tuple[int, ...]
    in_sync: tuple[int, ...]


class Admin:
    """An admin client of the brokers at `bootstrap` (`host:port[,host:port]`)."""

    def __init__(self, bootstrap: str, *, client_config: Mapping[str, str] | None = None) -> None:
        """Create the client (it connects on its first request); `client_config`: more librdkafka
        properties, the security ones of `KafkaClients.librdkafka`."""
        self.bootstrap = bootstrap
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "log.connection.close": False,
            "logger": _LIBRDKAFKA_LOG,
            **(client_config or {}),
        }
        self._client = AdminClient(config)

    def _metadata(self, timeout_ms: int) -> Any:
        try:
            return self._client.list_topics(timeout=timeout_ms / 1000)
        except KafkaException as exc:
            raise BrokerUnreachableError(
                f"no broker answered at {self.bootstrap} within {timeout_ms} ms: {exc}"
            ) from exc

    def topics(self, *, timeout_ms: int = 10_000) -> dict[str, int]:
        """Return every topic on the brokers with its partition count.

        Raises:
            BrokerUnreachableError: no broker answered within `timeout_ms`.
        """
        metadata = self._metadata(timeout_ms)
        return {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}

    def broker_count(self, *, timeout_ms: int = 10_000) -> int:
        """Return how many brokers the cluster's metadata lists (raises like `topics`)."""
        return len(self._metadata(timeout_ms).brokers)

    def replicas(
        self, names: Iterable[str] | None = None, *, timeout_ms: int = 10_000
    ) -> dict[tuple[str, int], PartitionReplicas]:
        """Return the replicas of every partition of the topics `names` (None: every topic), by
        (topic, partition), as the answering broker's metadata has them (raises like `topics`)."""
        topics = self._metadata(timeout_ms).topics
        wanted = set(topics) if names is None else set(names)
        return {
            (name, p): PartitionReplicas(meta.leader, tuple(meta.replicas), tuple(meta.isrs))
            for name, topic in topics.items()
            if name in wanted and topic.error is None
            for p, meta in topic.partitions.items()
        }

    def group_coordinator(self, group: str, *, timeout_ms: int = 10_000) -> int:
        """Return the broker id coordinating consumer group `group`."""
        (future,) = self._client.describe_consumer_groups([group], request_timeout=timeout_ms / 1000).values()
        return int(future.result(timeout=timeout_ms / 1000).coordinator.id)

    def topic_configs(self, names: Iterable[str], *, timeout_ms: int = 10_000) -> dict[str, dict[str, str]]:
        """Return the effective configuration of each topic of `names` (broker defaults included)."""
        resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in names]
        if not resources:
            return {}
        futures = self._client.describe_configs(resources, request_timeout=timeout_ms / 1000)
        out: dict[str, dict[str, str]] = {}
        for resource, future in futures.items():
            entries = future.result(timeout=timeout_ms / 1000)
            out[resource.name] = {key: entry.value for key, entry in entries.items()}
        return out

    def create_topics(
        self,
        requests: Iterable[NewTopicRequest],
        *,
        replication_factor: int | None = None,
        timeout_ms: int = 30_000,
    ) -> dict[str, Created]:
        """Create each topic of `requests`; return the outcome of each by name.

        A topic that already exists (created concurrently by someone else) is `exists`, not an error.
        `replication_factor` overrides every request's (-1: the broker's default). Returns once every
        created topic is in the metadata of the broker answering (Kafka creates asynchronously: a
        client that asks right after CreateTopics may otherwise not see the topic yet), or after
        `timeout_ms`.
        """
        requests = list(requests)
        if not requests:
            return {}
        new_topics = [
            NewTopic(
                r.name,
                num_partitions=r.partitions,
                replication_factor=r.replication_factor if replication_factor is None else replication_factor,
                config=dict(r.config),
            )
            for r in requests
        ]
        futures = self._client.create_topics(
            new_topics, operation_timeout=timeout_ms / 1000, request_timeout=timeout_ms / 1000
        )
        outcomes = {r.name: _created(futures[r.name], timeout_ms) for r in requests}
        self._wait_visible([name for name, o in outcomes.items() if o.outcome == "created"], timeout_ms)
        return outcomes

    def _wait_visible(self, names: list[str], timeout_ms: int) -> None:
        """Poll the metadata until every topic of `names` has its partitions and leaders, or time out."""
        deadline = time.monotonic() + timeout_ms / 1000
        while names and time.monotonic() < deadline:
            topics = self._metadata(timeout_ms).topics
            if all(_has_leaders(topics.get(name)) for name in names):
                return
            time.sleep(0.05)

    def delete_topics(self, names: Iterable[str], *, timeout_ms: int = 30_000) -> dict[str, str | None]:
        """Delete the topics `names`; return each one's error message (None when deleted)."""
        names = list(names)
        if not names:
            return {}
        futures = self._client.delete_topics(
            names, operation_timeout=timeout_ms / 1000, request_timeout=timeout_ms / 1000
        )
        return {name: _error_of(futures[name], timeout_ms) for name in names}

    def create_acls(
        self, grants: Iterable[AclGrant], *, timeout_ms: int = 30_000
    ) -> dict[AclGrant, str | None]:
        """Create an ALLOW ACL for each grant (idempotent); return each one's error message (None when
        created or already there). The principal of this client needs ALTER on the cluster."""
        grants = list(dict.fromkeys(grants))
        if not grants:
            return {}
        bindings = [_binding(g) for g in grants]
        futures = self._client.create_acls(bindings, request_timeout=timeout_ms / 1000)
        return {g: _error_of(futures[b], timeout_ms) for g, b in zip(grants, bindings, strict=True)}


_RESOURCE_TYPES = {
    "topic": KafkaResourceType.TOPIC,
    "group": KafkaResourceType.GROUP,
    "cluster": KafkaResourceType.BROKER,  # librdkafka's name for Kafka's CLUSTER resource type
    "transactional_id": KafkaResourceType.TRANSACTIONAL_ID,
}


def _binding(grant: AclGrant) -> AclBinding:
    return AclBinding(
        _RESOURCE_TYPES[grant.resource],
        grant.name,
        ResourcePatternType.PREFIXED if grant.pattern == "prefixed" else ResourcePatternType.LITERAL,
        grant.principal,
        grant.host,
        AclOperation[grant.operation.upper()],
        AclPermissionType.ALLOW,
    )


def _has_leaders(topic: Any) -> bool:
    """Whether a topic's metadata lists it without error, each partition with a leader."""
    if topic is None or topic.error is not None or not topic.partitions:
        return False
    return all(p.leader >= 0 for p in topic.partitions.values())


def _error_of(future: Future[None], timeout_ms: int) -> str | None:
    try:
        future.result(timeout=timeout_ms / 1000)
    except KafkaException as exc:
        error = exc.args[0]
        return f"{error.name()}: {error.str()}"
    return None


def _created(future: Future[None], timeout_ms: int) -> Created:
    try:
        future.result(timeout=timeout_ms / 1000)
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return Created("exists", "created concurrently")
        return Created("failed", f"{error.name()}: {error.str()}")
    return Created("created")
