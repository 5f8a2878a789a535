"""One hop through the embedded broker: does produce → consume latency grow as a topic grows?

A confluent producer writes `--rate` records/s (4 partitions, 1 ms bursts, `ts` = send time,
`--linger-ms`) for `--seconds`; an aiokafka consumer (fetch wait 10 ms, as the joiner's operators)
reads them and records receive time - `ts`. Prints p50/p99 per slice of the run, and the broker's
CPU seconds: if the later slices are slower at the same rate, the broker's cost grows with the
topic's length (measured: it does with tiny batches, docs/performance.md "Latency, and the
embedded broker").

    python bench/broker_latency.py --rate 10000 --seconds 15 --linger-ms 1
    python bench/broker_latency.py --rate 10000 --seconds 15 --linger-ms 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
import uuid
from types import MappingProxyType

from aiokafka import AIOKafkaConsumer
from confluent_kafka import Producer

from joiner_throughput_harness import cpu_seconds  # bench/ is on sys.path when run as a script
from pacing import produce_paced, warm_up
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.topics import TopicSpec, create_topics

PARTITIONS = 4


def produce_stamped(
    bootstrap: str, topic: str, rate: float, seconds: float, linger_ms: int, done: threading.Event
) -> None:
    """Write `rate` records/s for `seconds`, each carrying its send time in ms."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "enable.idempotence": True})
    warm_up(p, topic, partition=0)  # the idempotent producer's start-up is not the broker's cost

    def send(i: int, sent_ms: int) -> None:
        p.produce(topic, b'{"ts":%d,"i":%d}' % (sent_ms, i), partition=i % PARTITIONS)

    produce_paced(p, rate, seconds, send)
    p.flush(30)
    done.set()


async def run(
    rate: float, seconds: float, slices: int, config: dict[str, str], fetch_wait_ms: int, linger_ms: int
) -> dict[str, object]:
    """Run one measurement on a fresh embedded stack."""
    with EmbeddedStack() as stack:
        topic = f"hop-{uuid.uuid4().hex[:6]}"
        create_topics(
            stack.bootstrap,
            [TopicSpec(name=topic, role="internal", partitions=PARTITIONS, config=MappingProxyType(config))],
        )
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=stack.bootstrap,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=fetch_wait_ms,
        )
        await consumer.start()
        done = threading.Event()
        thread = threading.Thread(
            target=produce_stamped, args=(stack.bootstrap, topic, rate, seconds, linger_ms, done), daemon=True
        )
        broker = stack.services[0].process
        broker_pid = broker.pid if broker is not None else None
        cpu_before = cpu_seconds(broker_pid)
        thread.start()
        samples: list[tuple[float, float]] = []  # (send ms, latency ms)
        want = int(rate * seconds)
        deadline = time.monotonic() + seconds + 60
        while len(samples) < want and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=100)
            now_ms = time.time() * 1000
            for msgs in batch.values():
                for m in msgs:
                    if m.value and m.value != b"{}":
                        sent = json.loads(m.value)["ts"]
                        samples.append((sent, now_ms - sent))
        await consumer.stop()
        thread.join(timeout=5)
        cpu = cpu_seconds(broker_pid) - cpu_before
    samples.sort()
    per_slice = max(len(samples) // slices, 1)
    rows = []
    for k in range(0, len(samples), per_slice):
        lat = sorted(x for _, x in samples[k : k + per_slice])
        rows.append({"p50_ms": round(lat[len(lat) // 2], 1), "p99_ms": round(lat[int(len(lat) * 0.99)], 1)})
    return {
        "rate": rate,
        "linger_ms": linger_ms,
        "fetch_wait_ms": fetch_wait_ms,
        "config": config,
        "seconds": seconds,
        "received": len(samples),
        "broker_cpu_s": round(cpu, 2),
        "slices": rows,
    }


def main() -> None:
    """Parse the flags and print one JSON line."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=10_000)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--slices", type=int, default=6)
    parser.add_argument("--config", action="append", default=[], help="topic config KEY=VALUE")
    parser.add_argument("--fetch-wait-ms", type=int, default=10, help="the joiner's operators use 10")
    parser.add_argument("--linger-ms", type=int, default=1, help="the producer's linger.ms")
    args = parser.parse_args()
    config = dict(c.split("=", 1) for c in args.config)
    print(
        json.dumps(
            asyncio.run(run(args.rate, args.seconds, args.slices, config, args.fetch_wait_ms, args.linger_ms))
        )
    )


if __name__ == "__main__":
    main()
