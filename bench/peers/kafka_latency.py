"""One latency run of the Kafka mode: a system on fresh input topics fed at a fixed rate.

The system starts on empty topics; a warm-up (the workload's first records, at least 1,000 and
enough for a result, moved `_WARMUP_GAP_WINDOWS` largest windows before the workload, then one
record per stream and partition to release them) runs until its first result arrives, so start-up
is not in the figures.
Then the first `rate x seconds` records are produced on a schedule: the event time advances at the
pace that gives `rate` records per second, the records of one timestamp produced when its time
comes (`wall(ts) = t0 + (ts - ts0) / event_ms_per_s`). One consumer reads the output; a result's
latency is its arrival time minus the scheduled time of its youngest member (the `ts` every system
writes first in its result): the producer's batching, both broker hops, and the system. The
results of the paced part are counted against the reference of the same records.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.peers.joinplan import load
from bench.peers.kafka_inputs import (
    PARTITIONS,
    create,
    create_output,
    events,
    flush,
    flush_ts,
    new_producer,
    produce,
)
from bench.peers.kafka_run import start
from bench.peers.kafka_systems import KafkaSystem, Setting
from confluent_kafka import Consumer, TopicPartition

__all__ = ["latency_run", "result_ts"]

_WARMUP_RECORDS = 1000
_WARMUP_GAP_WINDOWS = 20
_READY_TIMEOUT_S = 900.0
_STALL_S = 30.0


def result_ts(value: bytes) -> int:
    """Return the first `"ts":` of a result: its youngest member's timestamp in every system's format."""
    start_at = value.index(b'"ts":') + 5
    end = start_at
    while value[end] in b"-0123456789":
        end += 1
    return int(value[start_at:end])


def _warmup_records(total: int, expect_for: Callable[[int], int]) -> int:
    """Return how many of the first records the warm-up needs to make a result (at least 1,000)."""
    records = min(_WARMUP_RECORDS, total)
    while records < total and expect_for(records) == 0:
        records = min(2 * records, total)
    return records


def _percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency_run(
    system: KafkaSystem,
    base: Setting,
    rate: int,
    seconds: float,
    tag: str,
    expect_for: Callable[[int], int],
) -> dict[str, Any]:
    """Run `system` at `rate` input records/s for `seconds` on fresh input topics (`base` names
    the output topic and everything else); return its latency figures."""
    inputs = create(base.bootstrap, base.directory, f"lat.{tag}")
    create_output(base.bootstrap, [base.output])
    s = Setting(
        base.directory, inputs, base.output, base.bootstrap, base.redis_url, base.peers_python, base.workdir
    )
    pairs = list(events(s.directory))
    n = min(len(pairs), max(int(rate * seconds), 1))
    paced = pairs[:n]
    widest = max(int(st["window_ms"]) for st in load(s.directory)["streams"])
    ts0, ts_end = paced[0][1]["ts"], paced[-1][1]["ts"]
    event_ms_per_s = (ts_end - ts0) / (n / rate) if ts_end > ts0 else 1000.0
    warm = pairs[: _warmup_records(len(pairs), expect_for)]
    shift = warm[-1][1]["ts"] - ts0 + _WARMUP_GAP_WINDOWS * widest
    consumer = Consumer({"bootstrap.servers": s.bootstrap, "group.id": f"lat-{tag}", "fetch.wait.max.ms": 10,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(s.output, p, 0) for p in range(PARTITIONS)])
    proc = start(system, s)
    producer = new_producer(s.bootstrap)
    samples: list[float] = []
    try:
        produce(producer, inputs, ((st, {**r, "ts": r["ts"] - shift}) for st, r in warm))
        flush(producer, inputs, ts0 - _WARMUP_GAP_WINDOWS * widest // 2)
        producer.flush(60)
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while not consumer.poll(0.2):
            if time.monotonic() > deadline or not proc.running:
                raise SystemExit(f"{system.name}: no warm-up result ({s.workdir / (s.output + '.log')})")
        t0 = time.time() + 0.5
        done = threading.Event()

        def pace() -> None:
            i = 0
            while i < n:
                due = ts0 + (time.time() - t0) * event_ms_per_s
                j = i
                while j < n and paced[j][1]["ts"] <= due:
                    j += 1
                if j > i:
                    produce(producer, inputs, paced[i:j])
                    i = j
                producer.poll(0)
                time.sleep(0.001)
            flush(producer, inputs, flush_ts(s.directory, ts_end))
            producer.flush(60)
            done.set()

        thread = threading.Thread(target=pace, daemon=True)
        thread.start()
        expect = expect_for(n)
        last = time.monotonic()
        while len(samples) < expect and not (done.is_set() and time.monotonic() - last > _STALL_S):
            for message in consumer.consume(10_000, timeout=0.05):
                if message.error() or message.value() is None:
                    continue
                now = time.time()
                ts = result_ts(message.value())
                if ts >= ts0:
                    samples.append(1000 * (now - t0) - (ts - ts0) / event_ms_per_s * 1000)
                    last = time.monotonic()
            if not proc.running:
                raise SystemExit(
                    f"{system.name} exited ({s.workdir / (s.output + '.log')}):\n{proc.log_tail()}"
                )
        thread.join(timeout=60)
    finally:
        proc.stop(timeout_ms=15_000)
        consumer.close()
    ordered = sorted(samples)
    return {
        "rate": rate,
        "records": n,
        "seconds": round(n / rate, 1),
        "results": len(samples),
        "expect": expect,
        "p50_ms": round(_percentile(ordered, 0.50), 1),
        "p99_ms": round(_percentile(ordered, 0.99), 1),
        "max_ms": round(ordered[-1], 1) if ordered else None,
        "mean_ms": round(statistics.fmean(ordered), 1) if ordered else None,
        "log": str(s.workdir / f"{s.output}.log"),
    }
