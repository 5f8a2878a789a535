"""Publishing and reading back what was published, against the real embedded broker.

Results of an operator that owns its output partition carry `sj-seq` on the last record of each
publish only; recovery counts the query's records after the last header. These tests check both
halves directly, including a publish cut short (records without a header at the tail) and records
of other queries and partitions interleaved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiokafka import TopicPartition
from confluent_kafka import Producer

from streamjoin.joiner.kafka_io import KafkaClients, highest_published, new_consumer, start_consumer
from streamjoin.joiner.outbox import HEADER_SEQ, OutboxRecord, parse_sequence_header
from streamjoin.joiner.publisher import Publisher

PREFIX = b'{"query":"q",'


def _records(n: int, query: str = "q", start: int = 0) -> list[OutboxRecord]:
    return [
        OutboxRecord(b"%d" % i, b'{"query":"%s","ts":%d}' % (query.encode(), i))
        for i in range(start, start + n)
    ]


async def _read_all(kafka: KafkaClients, topic: str) -> list[tuple[bytes, int | None]]:
    """Return (value, sj-seq or None) of every record of partition 0."""
    consumer = new_consumer(kafka, client_id="test-read")
    await start_consumer(consumer)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        end = (await consumer.end_offsets([tp]))[tp]
        out: list[tuple[bytes, int | None]] = []
        while len(out) < end:
            batch = await consumer.getmany(tp, timeout_ms=500)
            for m in batch.get(tp, ()):
                seqs = [parse_sequence_header(v) for k, v in m.headers if k == HEADER_SEQ]
                out.append((m.value, seqs[0][2] if seqs and seqs[0] else None))
        return out
    finally:
        await consumer.stop()


async def _highest(kafka: KafkaClients, topic: str, *, acked: int, exclusive: bool) -> tuple[int, int]:
    consumer = new_consumer(kafka, client_id="test-tail")
    await start_consumer(consumer)
    try:
        return await highest_published(
            consumer,
            TopicPartition(topic, 0),
            query="q",
            partition=3,
            from_offset=0,
            acked=acked,
            unmarked_prefix=PREFIX if exclusive else None,
        )
    finally:
        await consumer.stop()


def test_header_on_the_last_record_only_and_recovery_counts(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("pub")
    kafka = KafkaClients(kafka_broker)

    async def run() -> None:
        publisher = Publisher(kafka)
        try:
            first = await publisher.publish(
                topic, 0, 1, _records(100), query="q", source_partition=3, seq_on_last_only=True
            )
            second = await publisher.publish(
                topic, 0, 101, _records(50, start=100), query="q", source_partition=3, seq_on_last_only=True
            )
        finally:
            publisher.close()
        assert (first, second) == (99, 149)
        records = await _read_all(kafka, topic)
        assert [v for v, _ in records] == [r.value for r in _records(150)]  # in order, once each
        assert {i: s for i, (_, s) in enumerate(records) if s is not None} == {99: 100, 149: 150}
        assert await _highest(kafka, topic, acked=0, exclusive=True) == (150, 149)

        # A publish cut short (its headerless head only), with another query's records in between.
        producer = Producer({"bootstrap.servers": kafka_broker})
        for i in range(30):
            producer.produce(topic, _records(1, start=150 + i)[0].value, partition=0)
            if i % 10 == 0:
                producer.produce(topic, _records(1, query="other")[0].value, partition=0)
        producer.flush(10)
        # 150 + 30 records of ours and 3 of the other query: ours ends at offset 182
        assert await _highest(kafka, topic, acked=0, exclusive=True) == (180, 182)
        # a shared partition: only headers count
        assert await _highest(kafka, topic, acked=0, exclusive=False) == (150, 149)

    asyncio.run(run())


def test_every_record_has_its_header_on_a_shared_partition(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("pub")
    kafka = KafkaClients(kafka_broker)

    async def run() -> None:
        publisher = Publisher(kafka)
        try:
            await publisher.publish(topic, 0, 7, _records(20), query="q", source_partition=3)
        finally:
            publisher.close()
        records = await _read_all(kafka, topic)
        assert [s for _, s in records] == list(range(7, 27))
        assert await _highest(kafka, topic, acked=6, exclusive=False) == (26, 19)

    asyncio.run(run())


def test_nothing_of_ours_leaves_the_acknowledged_sequence(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("pub")
    kafka = KafkaClients(kafka_broker)
    producer = Producer({"bootstrap.servers": kafka_broker})
    producer.produce(topic, _records(1, query="q2")[0].value, partition=0)  # `q2` is not `q`
    producer.flush(10)
    assert asyncio.run(_highest(kafka, topic, acked=41, exclusive=True)) == (41, -1)
