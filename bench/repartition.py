"""The cost of the repartition hop (docs/joiner.md, "Re-keyed inputs"), on the embedded broker and Redis.

1. Throughput: N records are written to one source partition first; one `Repartitioner` (in this
   process, as a worker runs it) re-keys them into a 4-partition internal topic from `earliest`:
   records/s = N / time until its committed position reaches the end.
2. Latency: a fresh repartitioner at `latest`; records are produced at a fixed rate with their
   produce time in the value; one consumer reads the source topic (what a direct operator would
   see) and one the internal topic: p50 / p99 of receive time - produce time for each, and the
   difference is what the hop adds.

    python bench/repartition.py --records 200000 --rate 5000 --seconds 15

Every process it starts (broker, Redis) is stopped at the end, also on failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Producer

from streamjoin.dev.stack import EmbeddedStack
from streamjoin.joiner.health import Health
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.rekeyed.format import HEADER_SOURCE, generation
from streamjoin.joiner.repartition.producer import RekeyProducer
from streamjoin.joiner.repartition.repartitioner import RekeyJob, Repartitioner
from streamjoin.kafka import KafkaClients
from streamjoin.query import parse_query
from streamjoin.state.redis.repartition_store import RepartitionStore
from streamjoin.topics import TopicSpec, create_topics

PARTITIONS = 4
PAD = "x" * 40


def _job(name: str, source: str, internal: str, start: str) -> RekeyJob:
    query = parse_query(
        {
            "name": name,
            "inputs": [
                {"stream": "a", "topic": source, "timestamp": "ts", "window": {"range": 1000}},
                {"stream": "b", "topic": f"{source}.other", "timestamp": "ts", "window": {"range": 1000}},
            ],
            "where": [["a.k", "=", "b.k"]],
            "output": {"topic": "out"},
            "start": start,
        }
    )
    return RekeyJob(query, "a", source, 0, "k", internal, PARTITIONS, generation(time.time(), 1))


def _topics(stack: EmbeddedStack) -> tuple[str, str]:
    u = uuid.uuid4().hex[:8]
    source, internal = f"bench.rk.src.{u}", f"streamjoin.repartition.bench{u}.a"
    create_topics(
        stack.bootstrap, [TopicSpec(source, "input", 1), TopicSpec(internal, "internal", PARTITIONS)]
    )
    return source, internal


def _runner(stack: EmbeddedStack, job: RekeyJob) -> tuple[Repartitioner, RekeyProducer, RepartitionStore]:
    kafka = KafkaClients(stack.bootstrap)
    store = RepartitionStore(stack.redis_url, prefix="bench:")
    producer = RekeyProducer(kafka, client_id="bench-rekey", message_timeout_ms=30_000)
    runner = Repartitioner(
        job,
        kafka=kafka,
        store=store,
        producer=producer,
        owner="bench",
        health=Health(),
        config=OperatorConfig(),
    )
    return runner, producer, store


async def _position(store: RepartitionStore, job: RekeyJob) -> int:
    position = await store.position(job.query.name, job.position_name, job.partition)
    return -1 if position is None else position


async def throughput(stack: EmbeddedStack, n: int) -> dict[str, Any]:
    """Re-key a backlog of `n` records; return records/s."""
    source, internal = _topics(stack)
    p = Producer({"bootstrap.servers": stack.bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    for i in range(n):
        while True:
            try:
                p.produce(source, b'{"ts":%d,"k":%d,"pad":"%s"}' % (i, i % 997, PAD.encode()), partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    job = _job(f"tp{uuid.uuid4().hex[:6]}", source, internal, "earliest")
    runner, producer, store = _runner(stack, job)
    started = time.monotonic()
    runner.start()
    try:
        while await _position(store, job) < n:
            if time.monotonic() - started > 120:
                raise TimeoutError(f"re-keyed only to {await _position(store, job)} of {n}")
            await asyncio.sleep(0.05)
        elapsed = time.monotonic() - started
    finally:
        await runner.stop()
        producer.close()
        await store.aclose()
    return {"records": n, "seconds": round(elapsed, 2), "records_per_s": round(n / elapsed)}


async def _read(topic: str, bootstrap: str, out: list[float], stop: asyncio.Event) -> None:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="latest", fetch_max_wait_ms=5
    )
    await consumer.start()
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=50, max_records=10_000)
            now = time.time() * 1000
            for msgs in batch.values():
                for m in msgs:
                    if m.value and (
                        topic.startswith("bench.") or any(h[0] == HEADER_SOURCE for h in m.headers)
                    ):
                        out.append(now - orjson.loads(m.value)["sent"])
    finally:
        await consumer.stop()


async def latency(stack: EmbeddedStack, rate: float, seconds: float) -> dict[str, Any]:
    """Produce at `rate` records/s for `seconds`; return the latency of the source and internal topics."""
    source, internal = _topics(stack)
    job = _job(f"lat{uuid.uuid4().hex[:6]}", source, internal, "latest")
    runner, producer, store = _runner(stack, job)
    runner.start()
    direct: list[float] = []
    rekeyed: list[float] = []
    stop = asyncio.Event()
    readers = [
        asyncio.create_task(_read(source, stack.bootstrap, direct, stop)),
        asyncio.create_task(_read(internal, stack.bootstrap, rekeyed, stop)),
    ]
    try:
        while await _position(store, job) < 0:
            await asyncio.sleep(0.05)
        await asyncio.sleep(2)  # the readers are positioned
        p = Producer({"bootstrap.servers": stack.bootstrap, "linger.ms": 2})
        started = time.monotonic()
        i = 0
        while time.monotonic() - started < seconds:
            due = int((time.monotonic() - started) * rate)
            while i < due:
                value = b'{"ts":%d,"k":%d,"sent":%.3f,"pad":"%s"}' % (
                    i,
                    i % 997,
                    time.time() * 1000,
                    PAD.encode(),
                )
                p.produce(source, value, partition=0)
                i += 1
            p.poll(0)
            await asyncio.sleep(0.002)
        p.flush(30)
        await asyncio.sleep(3)
    finally:
        stop.set()
        await asyncio.gather(*readers, return_exceptions=True)
        await runner.stop()
        producer.close()
        await store.aclose()

    def pct(xs: list[float], q: float) -> float:
        return round(statistics.quantiles(xs, n=100)[q - 1], 1) if len(xs) > 100 else float("nan")

    return {
        "rate": rate,
        "records": i,
        "direct_ms": {"p50": pct(direct, 50), "p99": pct(direct, 99), "n": len(direct)},
        "rekeyed_ms": {"p50": pct(rekeyed, 50), "p99": pct(rekeyed, 99), "n": len(rekeyed)},
        "added_p50_ms": round(pct(rekeyed, 50) - pct(direct, 50), 1),
    }


async def main() -> None:
    """Run both measurements and print one JSON line each."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rate", type=float, default=5_000)
    parser.add_argument("--seconds", type=float, default=15)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="streamjoin-bench-"))
    with EmbeddedStack(workdir=workdir / "stack") as stack:
        print(json.dumps({"throughput": await throughput(stack, args.records)}), flush=True)
        print(json.dumps({"latency": await latency(stack, args.rate, args.seconds)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
