"""`streamjoin.kafka` against the real embedded broker: admin calls, consumers, producers, typed names."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

import aiokafka.errors
import aiokafka.structs
import confluent_kafka
import pytest

from streamjoin.kafka import (
    Admin,
    BrokerUnreachableError,
    ConsumerError,
    KafkaClients,
    ProducerError,
    TopicPartition,
    end_offsets,
    new_consumer,
    new_producer,
    partition_counts,
    start_consumer,
    start_offsets,
    topic_partition_count,
)

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class _Request:
    name: str
    partitions: int
    replication_factor: int = -1
    config: dict[str, str] = field(default_factory=dict)


def test_the_typed_names_are_the_client_classes() -> None:
    assert TopicPartition is aiokafka.structs.TopicPartition
    assert ConsumerError is aiokafka.errors.KafkaError
    assert ProducerError is confluent_kafka.KafkaException


def test_admin_creates_lists_and_deletes_topics(kafka_broker: str) -> None:
    admin = Admin(kafka_broker)
    name = f"test.admin.{uuid.uuid4().hex[:12]}"
    assert admin.broker_count() == 1
    assert admin.create_topics([_Request(name, 3)])[name].outcome == "created"
    assert admin.topics()[name] == 3
    again = admin.create_topics([_Request(name, 3)])[name]
    assert (again.outcome, again.message) == ("exists", "created concurrently")
    assert admin.delete_topics([name]) == {name: None}
    # Deletion completes in the background on Apache Kafka: the metadata stops listing it soon after.
    deadline = time.monotonic() + 15
    while name in admin.topics() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert name not in admin.topics()
    assert admin.create_topics([]) == {} and admin.delete_topics([]) == {}


def test_admin_reports_an_unreachable_broker() -> None:
    with pytest.raises(BrokerUnreachableError, match=r"no broker answered at 127\.0\.0\.1:9 "):
        Admin("127.0.0.1:9").topics(timeout_ms=300)


def test_produced_records_are_counted_and_read_back(kafka_broker: str) -> None:
    admin = Admin(kafka_broker)
    name = f"test.clients.{uuid.uuid4().hex[:12]}"
    assert admin.create_topics([_Request(name, 2)])[name].outcome == "created"
    producer = new_producer({"bootstrap.servers": kafka_broker, "linger.ms": 0})
    assert topic_partition_count(producer, name) == 2
    # (a missing topic is not asked for: the embedded broker creates it on a metadata request)
    for i in range(5):
        producer.produce(name, value=f"v{i}".encode(), key=b"k", partition=1)
    assert producer.flush(10) == 0

    async def read() -> None:
        kafka = KafkaClients(kafka_broker)
        consumer = new_consumer(kafka, client_id="test-kafka-clients")
        await start_consumer(consumer)
        try:
            assert await partition_counts(consumer, kafka, [name, f"{name}.missing"]) == {name: 2}
            tps = [TopicPartition(name, 0), TopicPartition(name, 1)]
            # Apache Kafka lists each end exactly: the listing and a fetch response agree.
            first, ends = {tps[0]: 0, tps[1]: 0}, {tps[0]: 0, tps[1]: 5}
            for exact in (True, False):
                assert await end_offsets(consumer, tps, exact=exact) == ends
                assert await start_offsets(consumer, tps, "earliest", exact_ends=exact) == first
                assert await start_offsets(consumer, tps, 0, exact_ends=exact) == first
                assert await start_offsets(consumer, tps, "latest", exact_ends=exact) == ends
            consumer.assign(tps)
            consumer.seek(tps[1], 2)
            values: list[bytes | None] = []
            while len(values) < 3:
                batch = await consumer.getmany(tps[1], timeout_ms=1_000)
                values.extend(r.value for r in batch.get(tps[1], []))
            assert values == [b"v2", b"v3", b"v4"]
        finally:
            await consumer.stop()

    asyncio.run(read())
