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

from streamjoin.joiner.operators.kafka_io import highest_published
from streamjoin.joiner.publish.outbox import HEADER_SEQ, OutboxRecord, parse_sequence_header
from streamjoin.joiner.publish.publisher import Publisher
from streamjoin.kafka import KafkaClients, new_consumer, start_consumer

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
            exact_ends=kafka.listed_ends_exact,
            unmarked_prefix=PREFIX if exclusive else None,
        )
    finally:
        await consumer.stop()


async def _publish(
    kafka: KafkaClients, topic: str, batches: list[tuple[int, list[OutboxRecord]]], *, exclusive: bool
) -> list[int]:
    """Publish each (first sequence number, records) with a fresh `Publisher`; return the offsets."""
    publisher = Publisher(kafka)
    try:
        return [
            await publisher.publish(
                topic, 0, first, records, query="q", source_partition=3, seq_on_last_only=exclusive
            )
            for first, records in batches
        ]
    finally:
        publisher.close()


def _produce_plain(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """Write `values` to partition 0 without headers, as a publish cut short leaves them."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value, partition=0)
    producer.flush(10)


def test_header_on_the_last_record_only_and_recovery_counts(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("pub")
    kafka = KafkaClients(kafka_broker)

    async def run() -> None:
        offsets = await _publish(
            kafka, topic, [(1, _records(100)), (101, _records(50, start=100))], exclusive=True
        )
        assert offsets == [99, 149]
        records = await _read_all(kafka, topic)
        assert [v for v, _ in records] == [r.value for r in _records(150)]  # in order, once each
        assert {i: s for i, (_, s) in enumerate(records) if s is not None} == {99: 100, 149: 150}
        assert await _highest(kafka, topic, acked=0, exclusive=True) == (150, 149)

        # A publish cut short (its headerless head only), with another query's records in between.
        other = _records(1, query="other")[0].value
        tail: list[bytes] = []
        for i, record in enumerate(_records(30, start=150)):
            tail.append(record.value)
            if i % 10 == 0:
                tail.append(other)
        _produce_plain(kafka_broker, topic, tail)
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
        await _publish(kafka, topic, [(7, _records(20))], exclusive=False)
        records = await _read_all(kafka, topic)
        assert [s for _, s in records] == list(range(7, 27))
        assert await _highest(kafka, topic, acked=6, exclusive=False) == (26, 19)

    asyncio.run(run())


def test_nothing_of_ours_leaves_the_acknowledged_sequence(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("pub")
    _produce_plain(kafka_broker, topic, [_records(1, query="q2")[0].value])  # `q2` is not `q`
    assert asyncio.run(_highest(KafkaClients(kafka_broker), topic, acked=41, exclusive=True)) == (41, -1)


def test_publishes_larger_than_the_producer_queue_go_through_in_order(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    """Concurrent publishes to one partition through a queue of 40 records: one record by one
    (`BufferError`, wait, retry) and an owned-partition publish larger than the queue (it cannot
    wait for room for all of it, so it goes one by one too) all land, in order, once."""
    topic = make_topic("pub")
    kafka = KafkaClients(kafka_broker)

    async def run() -> list[int]:
        publisher = Publisher(kafka, queue_messages=40)
        try:
            return list(
                await asyncio.gather(
                    publisher.publish(topic, 0, 1, _records(200), query="q", source_partition=3),
                    publisher.publish(
                        topic,
                        0,
                        201,
                        _records(60, start=200),
                        query="q",
                        source_partition=3,
                        seq_on_last_only=True,
                    ),
                    publisher.publish(
                        topic,
                        0,
                        261,
                        _records(10, start=260),
                        query="q",
                        source_partition=3,
                        seq_on_last_only=True,
                    ),
                )
            )
        finally:
            publisher.close()

    assert asyncio.run(run()) == [199, 259, 269]
    records = asyncio.run(_read_all(kafka, topic))
    assert [v for v, _ in records] == [r.value for r in _records(270)]
    # one by one: every record numbered; the small owned-partition publish: its last record only
    assert {i: s for i, (_, s) in enumerate(records) if s is not None} == {i: i + 1 for i in range(260)} | {
        269: 270
    }
