"""The floor of `joiner_throughput.py`'s latency: a worker that does no work.

It reads the input topics as an operator does (one aiokafka consumer, fetch wait 10 ms) and writes
each record's `ts` to the same partition of the output topic as the worker's producer does
(confluent-kafka, linger 2 ms), with no join, no Redis and no exactly-once protocol. What the
benchmark measures through it is what the embedded broker and the 2 cores cost on their own:
`joiner_throughput.py --forwarder` runs it in place of the joiner workers.

    python bench/forwarder.py BOOTSTRAP OUTPUT INPUT [INPUT ...]   (prints "ready" once positioned)
"""

from __future__ import annotations

import asyncio
import sys
import time

from aiokafka import AIOKafkaConsumer, TopicPartition
from confluent_kafka import Producer

FLUSH_AHEAD_MS = 10**8  # the benchmark's flush records are 10**9 ms ahead: not results


async def forward(bootstrap: str, output: str, inputs: list[str]) -> None:
    """Forward until killed."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=10, group_id=None
    )
    await consumer.start()
    await consumer.topics()  # loads the metadata of every topic
    tps = [TopicPartition(t, p) for t in inputs for p in sorted(consumer.partitions_for_topic(t) or ())]
    consumer.assign(tps)
    await consumer.seek_to_beginning(*tps)  # fresh topics, written only after "ready"
    for tp in tps:
        await consumer.position(tp)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": True})
    print("ready", flush=True)
    while True:
        data = await consumer.getmany(timeout_ms=20, max_records=5_000)
        horizon = time.time() * 1000 + FLUSH_AHEAD_MS
        for tp, records in data.items():
            for r in records:
                start = r.value.index(b'"ts":') + 5
                ts = r.value[start : r.value.index(b",", start)]
                if int(ts) < horizon:
                    value = b'{"query":"forward","ts":%s,"k":0}' % ts
                    producer.produce(output, value, partition=tp.partition)
        producer.poll(0)


if __name__ == "__main__":
    asyncio.run(forward(sys.argv[1], sys.argv[2], sys.argv[3:]))
