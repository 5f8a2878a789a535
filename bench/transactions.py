"""Would Kafka transactions make the joiner's publish simpler or faster? Measured on Apache Kafka.

The joiner publishes each committed batch's results from its Redis outbox with an idempotent
producer and waits for the acknowledgements (docs/exactly-once.md). A transactional producer would
instead wrap each batch in a transaction together with the consumed offsets
(`send_offsets_to_transaction`). This bench publishes the same records both ways, alternating
runs, at several batch sizes, on the embedded Apache Kafka node, and prints records/s, the
latency of one batch (produce to acknowledged or committed) and the CPU seconds of this client
and of the broker.

    python -m bench.transactions --records 200000 --batches 100,1000,5000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from bench.joiner_throughput_harness import cpu_seconds
from confluent_kafka import Consumer, Producer, TopicPartition

from streamjoin.dev.kafka_broker import KafkaBroker
from streamjoin.kafka import Admin

__all__ = ["main"]

_PARTITIONS = 4
_VALUE = json.dumps({"query": "q", "a": {"id": 1, "ts": 1_700_000_000_000, "pad": "x" * 120}}).encode()


def _producer(bootstrap: str, *, transactional: bool) -> Producer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 2,
        "batch.size": 1 << 20,
        "queue.buffering.max.messages": 1_000_000,
    }
    if transactional:
        config["transactional.id"] = f"bench-{uuid.uuid4().hex[:8]}"
    return Producer(config)


def _publish_batch(producer: Producer, topic: str, size: int, first: int) -> None:
    for i in range(size):
        producer.produce(topic, _VALUE, key=str(first + i).encode(), partition=(first + i) % _PARTITIONS)
        producer.poll(0)


def run_mode(bootstrap: str, topic: str, group: str, *, transactional: bool, records: int,
             batch: int, broker_pid: int | None) -> dict[str, float | int | str]:  # fmt: skip
    """Publish `records` in batches of `batch`; return the figures of this run."""
    producer = _producer(bootstrap, transactional=transactional)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    if transactional:
        producer.init_transactions(30)
    latencies: list[float] = []
    client_cpu, broker_cpu, started = time.process_time(), cpu_seconds(broker_pid), time.perf_counter()
    for first in range(0, records, batch):
        t0 = time.perf_counter()
        if transactional:
            producer.begin_transaction()
            _publish_batch(producer, topic, batch, first)
            # The consumed offsets of the batch, committed atomically with its results.
            offsets = [TopicPartition(topic, p, first + batch) for p in range(_PARTITIONS)]
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        else:
            _publish_batch(producer, topic, batch, first)
            remaining = producer.flush(30)
            if remaining:
                raise RuntimeError(f"{remaining} records unacknowledged after 30 s")
        latencies.append((time.perf_counter() - t0) * 1000)
    wall = time.perf_counter() - started
    consumer.close()
    latencies.sort()
    return {
        "mode": "transactional" if transactional else "idempotent",
        "batch": batch,
        "records": records,
        "records_per_s": round(records / wall),
        "batch_ms_p50": round(statistics.median(latencies), 2),
        "batch_ms_p99": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2),
        "client_cpu_s": round(time.process_time() - client_cpu, 2),
        "broker_cpu_s": round(cpu_seconds(broker_pid) - broker_cpu, 2),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; print one line per run and a JSON summary."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batches", default="100,1000,5000", help="batch sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of both modes")
    parser.add_argument("--out", type=Path, help="also write the runs as JSON here")
    args = parser.parse_args(argv)
    runs: list[dict[str, float | int | str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-tx-") as workdir:
        broker = KafkaBroker()
        broker.start(Path(workdir))
        try:
            assert broker.bootstrap is not None and broker.process is not None
            admin = Admin(broker.bootstrap)
            for batch in (int(b) for b in args.batches.split(",")):
                for round_ in range(args.rounds):
                    for transactional in (False, True) if round_ % 2 == 0 else (True, False):
                        topic = f"bench.tx.{uuid.uuid4().hex[:8]}"
                        admin.create_topics([_Topic(topic)])
                        figures = run_mode(
                            broker.bootstrap, topic, f"g-{topic}", transactional=transactional,
                            records=args.records, batch=batch, broker_pid=broker.process.pid,
                        )  # fmt: skip
                        runs.append(figures)
                        print(json.dumps(figures), flush=True)
        finally:
            broker.stop()
    _summary(runs)
    if args.out:
        args.out.write_text(json.dumps(runs, indent=1) + "\n")
    return 0


def _summary(runs: list[dict[str, float | int | str]]) -> None:
    print(f"{'batch':>6} {'mode':<14} {'records/s':>10} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'client CPU s':>12} {'broker CPU s':>12}")  # fmt: skip
    for batch in sorted({int(r["batch"]) for r in runs}):
        for mode in ("idempotent", "transactional"):
            mine = [r for r in runs if r["batch"] == batch and r["mode"] == mode]
            if not mine:
                continue

            def med(key: str, mine: list[dict[str, float | int | str]] = mine) -> float:
                return statistics.median(float(r[key]) for r in mine)

            rate, p50, p99 = med("records_per_s"), med("batch_ms_p50"), med("batch_ms_p99")
            print(f"{batch:>6} {mode:<14} {rate:>10.0f} {p50:>8.2f} {p99:>8.2f} "
                  f"{med('client_cpu_s'):>12.2f} {med('broker_cpu_s'):>12.2f}")  # fmt: skip


class _Topic:
    """A topic of the bench: `_PARTITIONS` partitions, the broker's replication factor."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.partitions = _PARTITIONS
        self.replication_factor = -1
        self.config: dict[str, str] = {}


if __name__ == "__main__":
    raise SystemExit(main())
