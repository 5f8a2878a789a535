"""`ReaderPool` against the real embedded broker: operators share consumers without losing place.

A lease reads its partitions from its own offsets; another lease joining or leaving the same
consumer re-assigns it, and every lease still reads each of its records exactly once, in order.
Two leases of one partition (two queries of one stream) get separate consumers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from aiokafka import TopicPartition
from confluent_kafka import Producer

from streamjoin.joiner.kafka_io import KafkaClients
from streamjoin.joiner.reader import ReaderLease, ReaderPool


def _produce(bootstrap: str, topic: str, partitions: int, per_partition: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(partitions):
        for i in range(start, start + per_partition):
            producer.produce(topic, b"%d" % i, partition=p)
    producer.flush(10)


async def _read(
    lease: ReaderLease, tps: list[TopicPartition], want: int, *, max_records: int = 7, seconds: float = 10
) -> list[int]:
    """Read up to `want` records of `tps` in small batches within `seconds`; return their values."""
    got: list[int] = []
    deadline = time.monotonic() + seconds
    while len(got) < want and time.monotonic() < deadline:
        data = await lease.getmany(*tps, timeout_ms=50, max_records=max_records)
        for records in data.values():
            got.extend(int(r.value) for r in records)
    return got


def test_leases_share_a_consumer_and_keep_their_positions(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("reader", partitions=3)
    _produce(kafka_broker, topic, 3, 100)
    tp0, tp1, tp2 = (TopicPartition(topic, p) for p in range(3))

    async def run() -> None:
        pool = ReaderPool(KafkaClients(kafka_broker), client_id="test")
        try:
            a = await pool.lease({tp0: 10})
            first = await _read(a, [tp0], 40)
            assert first[:40] == list(range(10, 50))
            # b joins the same consumer (disjoint partitions): a continues exactly where it was
            b = await pool.lease({tp1: 0, tp2: 95})
            assert pool.consumers == 1
            rest_a = await _read(a, [tp0], 100 - 10 - len(first))
            assert first + rest_a == list(range(10, 100))
            got_b = await _read(b, [tp1, tp2], 105)
            assert sorted(got_b) == sorted([*range(100), *range(95, 100)])
            # a leaves: b's positions survive the re-assignment; new records arrive once each
            await pool.release(a)
            _produce(kafka_broker, topic, 3, 20, start=100)
            more_b = await _read(b, [tp1, tp2], 40)
            assert sorted(more_b) == sorted([*range(100, 120)] * 2)
            assert await _read(b, [tp1, tp2], 1, seconds=1) == []  # nothing twice
            await pool.release(b)
            assert pool.consumers == 0
        finally:
            await pool.close()

    asyncio.run(run())


def test_two_leases_of_one_partition_get_separate_consumers(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("reader", partitions=1)
    _produce(kafka_broker, topic, 1, 50)
    tp = TopicPartition(topic, 0)

    async def run() -> None:
        pool = ReaderPool(KafkaClients(kafka_broker), client_id="test")
        try:
            early = await pool.lease({tp: 0})
            late = await pool.lease({tp: 30})
            assert pool.consumers == 2
            assert await _read(late, [tp], 20) == list(range(30, 50))
            assert await _read(early, [tp], 50) == list(range(50))
            await pool.release(early)
            assert pool.consumers == 1
            _produce(kafka_broker, topic, 1, 5, start=50)
            assert await _read(late, [tp], 5) == list(range(50, 55))
        finally:
            await pool.close()

    asyncio.run(run())
