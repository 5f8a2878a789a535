"""The embedded broker answers Kafka requests; the declared topics are created as declared, idempotently."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from confluent_kafka.admin import AdminClient, ConfigResource

from streamjoin.dev.checks import broker_round_trip
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.topics import TopicCatalog, TopicSpec, broker_topics, create_topics

from .sockets import listening_addresses


def test_broker_answers_a_metadata_request(kafka_broker: str) -> None:
    metadata = AdminClient({"bootstrap.servers": kafka_broker}).list_topics(timeout=10)
    assert [f"{b.host}:{b.port}" for b in metadata.brokers.values()] == [kafka_broker]


def test_broker_listens_on_loopback_only(embedded_stack: EmbeddedStack) -> None:
    process = embedded_stack.broker.process
    assert process is not None and process.pid is not None
    addresses = listening_addresses(process.pid)
    # Apache Kafka also listens on its controller port; every socket is on loopback.
    assert ("127.0.0.1", embedded_stack.broker.port) in addresses
    assert {host for host, _ in addresses} == {"127.0.0.1"}


def test_declared_topics_have_their_declared_partitions(
    declared_topics: TopicCatalog, kafka_broker: str
) -> None:
    on_broker = broker_topics(kafka_broker)
    assert {spec.name: on_broker.get(spec.name) for spec in declared_topics} == {
        spec.name: spec.partitions for spec in declared_topics
    }
    assert declared_topics["streamjoin.registry"].partitions == 1


def test_creating_topics_again_is_idempotent(declared_topics: TopicCatalog, kafka_broker: str) -> None:
    results = create_topics(kafka_broker, declared_topics)
    assert [(r.spec.name, r.outcome) for r in results] == [(spec.name, "exists") for spec in declared_topics]


def test_an_existing_topic_with_other_partitions_is_a_mismatch(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    name = make_topic("mismatch", partitions=2)
    (result,) = create_topics(kafka_broker, [TopicSpec(name=name, role="input", partitions=3)])
    assert (result.outcome, result.partitions, result.ok) == ("mismatch", 2, False)
    assert "declared 3" in result.message


def test_compaction_config_is_accepted_and_kept(declared_topics: TopicCatalog, kafka_broker: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    (future,) = admin.describe_configs([ConfigResource("topic", "streamjoin.registry")]).values()
    configs = future.result(timeout=10)
    assert configs["cleanup.policy"].value == "compact"


def test_make_topic_creates_fresh_topics(kafka_broker: str, make_topic: Callable[..., str]) -> None:
    first = make_topic("fresh", partitions=3, config=MappingProxyType({"retention.ms": "60000"}))
    second = make_topic("fresh", partitions=3)
    assert first != second
    assert broker_topics(kafka_broker)[first] == 3


def test_a_record_round_trips_through_the_broker(declared_topics: TopicCatalog, kafka_broker: str) -> None:
    trip = broker_round_trip(kafka_broker, "streamjoin.health", timeout_ms=15_000)
    again = broker_round_trip(kafka_broker, "streamjoin.health", timeout_ms=15_000)
    assert (trip.topic, trip.partition) == ("streamjoin.health", 0)
    assert again.offset > trip.offset
