"""Pytest fixtures for the real embedded broker and Redis; load with `pytest_plugins = [...]` in a conftest.

Fixtures (one stack per test session, i.e. per xdist worker, so parallel runs never share ports):

- `embedded_stack`: the running `EmbeddedStack`.
- `kafka_broker`: its bootstrap address, `127.0.0.1:PORT`.
- `redis_server`: its Redis URL, `redis://127.0.0.1:PORT/0`.
- `declared_topics`: the topic catalog, created on the broker.
- `redis_cluster`: the URL of an embedded Redis Cluster (3 primaries, 3 replicas),
  `redis+cluster://127.0.0.1:PORT`; `redis_cluster_nodes`: its `EmbeddedRedisCluster` (kill a node).
- `any_redis`: parametrized: the embedded Redis URL, then the cluster's (tests run on both).
- `make_topic`: a factory creating a fresh, uniquely named topic: `make_topic("orders", partitions=4)`.
- `schema_registry`: the Confluent API URL of a real schema registry (Apicurio Registry, in memory).
- `secured_kafka`: a second Apache Kafka node that requires SASL/SCRAM logins and ACLs
  (`streamjoin.dev.kafka_security`): its bootstrap and the users `admin` (super user), `streamjoin`
  and `other` (no ACL is created: a test grants what it needs as the admin).

Tests using any of them are marked `integration` automatically. The stack is stopped at the end of the
session, also when a test fails, on Ctrl-C and on SIGTERM; nothing is left running.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import FrameType, MappingProxyType
from typing import NoReturn

import pytest

from streamjoin.dev.kafka_broker import KafkaBroker, kafka_available
from streamjoin.dev.kafka_security import KafkaSecurity, SecuredKafka
from streamjoin.dev.redis_cluster import EmbeddedRedisCluster
from streamjoin.dev.schema_registry import EmbeddedSchemaRegistry, schema_registry_available
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.settings import ENV_PREFIX
from streamjoin.topics import TopicCatalog, TopicSpec, create_topics, load_catalog

__all__ = [
    "INTEGRATION_FIXTURES",
    "any_redis",
    "declared_topics",
    "embedded_stack",
    "kafka_broker",
    "make_topic",
    "redis_cluster",
    "redis_cluster_nodes",
    "redis_server",
    "schema_registry",
    "skip_without_schema_registry",
    "secured_kafka",
]

INTEGRATION_FIXTURES = frozenset(
    {
        "embedded_stack",
        "kafka_broker",
        "redis_server",
        "declared_topics",
        "make_topic",
        "redis_cluster",
        "redis_cluster_nodes",
        "any_redis",
        "schema_registry",
        "secured_kafka",
    }
)

MakeTopic = Callable[..., str]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the embedded stack as `integration`."""
    for item in items:
        if INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While the stack runs, let SIGTERM interrupt pytest like Ctrl-C does, so teardown still runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the teardown short
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def embedded_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedStack]:
    """Start the embedded broker and Redis once per session; stop them at its end."""
    workdir = tmp_path_factory.mktemp("embedded-stack")
    with _sigterm_interrupts(), EmbeddedStack(workdir=workdir) as stack:
        # Declared topics exist before any test's service runs, as in production (the topics job
        # runs first): otherwise a joiner may create, say, the dead-letter topic with other partitions.
        _create_declared_topics(stack.bootstrap)
        yield stack


def _skip_or_fail(reason: str) -> NoReturn:
    """Skip the test saying why it cannot run here, or fail it in CI (`CI=true`)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def skip_without_schema_registry() -> None:
    """Skip the test saying why no schema registry can run here (no Java, no Maven and no cached
    jars), or fail it in CI, where one must run."""
    why_not = schema_registry_available()
    if why_not is not None:
        _skip_or_fail(f"no schema registry can run here (docs/embedded-stack.md): {why_not}")


@pytest.fixture(scope="session")
def schema_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real schema registry (Apicurio Registry, its schemas in memory; its jars fetched from Maven
    Central on first use): its Confluent API URL, `http://127.0.0.1:PORT/apis/ccompat/v7`. Where it
    cannot run, skipped with the reason, except in CI (`CI=true`), where that fails."""
    skip_without_schema_registry()
    registry = EmbeddedSchemaRegistry()
    with _sigterm_interrupts():
        try:
            registry.start(tmp_path_factory.mktemp("schema-registry"))
            assert registry.url is not None
            yield registry.url
        finally:
            registry.stop()


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredKafka]:
    """An Apache Kafka node with SASL/SCRAM and ACLs (users admin, streamjoin, other), once per session."""
    why_not = kafka_available()
    if why_not is not None:
        _skip_or_fail(f"Apache Kafka cannot run here: {why_not}")
    security = KafkaSecurity.generate("streamjoin", "other")
    broker = KafkaBroker(security=security, ready_timeout_ms=180_000)  # a shared machine: slow starts
    with _sigterm_interrupts():
        try:
            broker.start(tmp_path_factory.mktemp("secured-kafka"))
            assert broker.bootstrap is not None
            yield SecuredKafka(broker.bootstrap, security)
        finally:
            broker.stop()


@pytest.fixture(scope="session")
def kafka_broker(embedded_stack: EmbeddedStack) -> str:
    """The embedded broker's bootstrap address. On Tansu (`STREAMJOIN_DEV_BROKER=tansu`) the workers
    the tests start read partition ends from fetch responses (`Settings.kafka_listed_ends_exact`)."""
    if not embedded_stack.listed_ends_exact:
        os.environ[ENV_PREFIX + "KAFKA_LISTED_ENDS_EXACT"] = "false"
    return embedded_stack.bootstrap


@pytest.fixture(scope="session")
def redis_server(embedded_stack: EmbeddedStack) -> str:
    """The embedded Redis URL."""
    return embedded_stack.redis_url


@pytest.fixture(scope="session")
def redis_cluster_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedisCluster]:
    """Start an embedded Redis Cluster once per session; stop every node at its end."""
    workdir = tmp_path_factory.mktemp("redis-cluster")
    with _sigterm_interrupts(), EmbeddedRedisCluster() as cluster:
        cluster.start(workdir)
        yield cluster


@pytest.fixture(scope="session")
def redis_cluster(redis_cluster_nodes: EmbeddedRedisCluster) -> str:
    """The embedded Redis Cluster's URL, `redis+cluster://127.0.0.1:PORT`."""
    url = redis_cluster_nodes.url
    assert url is not None
    return url


@pytest.fixture(params=["single", "cluster"])
def any_redis(request: pytest.FixtureRequest) -> str:
    """The URL of the embedded Redis, then of the embedded Redis Cluster (a test runs on both)."""
    name = "redis_server" if request.param == "single" else "redis_cluster"
    return str(request.getfixturevalue(name))


def _create_declared_topics(bootstrap: str) -> TopicCatalog:
    catalog = load_catalog()
    failed = [r for r in create_topics(bootstrap, catalog) if not r.ok]
    if failed:
        raise RuntimeError(f"creating the declared topics failed: {failed}")
    return catalog


@pytest.fixture(scope="session")
def declared_topics(kafka_broker: str) -> TopicCatalog:
    """Create every declared topic on the embedded broker (idempotent); return the catalog."""
    return _create_declared_topics(kafka_broker)


@pytest.fixture
def make_topic(kafka_broker: str) -> MakeTopic:
    """Return `make_topic(prefix, partitions=1, config=None)`: it creates a fresh topic, returns its name."""

    def make(prefix: str = "test", partitions: int = 1, config: Mapping[str, str] | None = None) -> str:
        spec = TopicSpec(
            name=f"{prefix}.{uuid.uuid4().hex[:12]}",
            role="internal",
            partitions=partitions,
            config=MappingProxyType(dict(config or {})),
        )
        (result,) = create_topics(kafka_broker, [spec])
        if result.outcome != "created":
            raise RuntimeError(f"creating topic {spec.name} failed: {result.outcome} {result.message}")
        return spec.name

    return make
