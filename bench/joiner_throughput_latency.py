"""The joiner's latency at a fixed input rate (`joiner_throughput.py` runs it after the throughput).

A fresh query at `latest`; records are produced at a fixed rate with `ts` = produce time (ms); a
consumer reads the results and records receive time - `ts` (the youngest component's produce
time): p50 / p99, per second, and split into input hop + worker and output hop.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer

from joiner_throughput_harness import (
    PARTITIONS,
    STREAMS,
    expected_results,
    flush_records,
    producer,
    query_json,
    record_sender,
    register,
    result_ts,
    start_forwarder,
    start_workers,
    stop_workers,
    wait_running,
)
from pacing import produce_paced, warm_up
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.registry import RegistryStore
from streamjoin.topics import TopicSpec, create_topics

__all__ = ["latency", "worker_latency_ms"]


async def latency(
    stack: EmbeddedStack,
    workdir: Path,
    workers: int,
    rate: float,
    seconds: float,
    linger_ms: int,
    worker_args: Sequence[str],
    forwarder: bool = False,
) -> dict[str, Any]:
    """Produce at `rate` records/s for `seconds` (the producer's `linger.ms` counts in the latency,
    since `ts` is taken before it); return latency percentiles (ms). With `forwarder`,
    `bench/forwarder.py` stands in for the workers: the latency of a worker that does nothing."""
    u = uuid.uuid4().hex[:6]
    topics = {s: f"lat.{s}.{u}" for s in STREAMS}
    output = f"lat.out.{u}"
    warmup = f"lat.warmup.{u}"
    specs = [TopicSpec(t, "internal", PARTITIONS) for t in [*topics.values(), output, warmup]]
    create_topics(stack.bootstrap, specs)
    prefix = f"lat{u}:"
    if forwarder:
        procs = [start_forwarder(stack, workdir, topics, output)]
    else:
        procs = start_workers(stack, workdir, workers, prefix, f"lat-{u}", worker_args)
    samples: list[float] = []
    timeline: list[tuple[float, float]] = []  # (produce time, latency), for the per-second p99
    # The result's Kafka timestamp is the worker's produce time: it splits each latency into
    # "input hop + worker" and "output hop" (the embedded broker's share shows in both).
    legs: list[tuple[float, float]] = []
    try:
        if not forwarder:
            await register(stack.redis_url, prefix, query_json(f"lat{u}", topics, output, "latest"))
            await wait_running(stack.redis_url, prefix, f"lat{u}")
        # The reader is aiokafka: librdkafka's consumer adds about 50 ms per fetch against the
        # embedded broker (measured: p50 55 ms for one hop, aiokafka 8 ms). It does not decode the
        # results (`result_ts`): on 2 cores every CPU millisecond it spends is one the worker lacks.
        consumer = AIOKafkaConsumer(
            output, bootstrap_servers=stack.bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=5
        )
        await consumer.start()
        done = threading.Event()
        sent = [0]

        def paced() -> None:
            p = producer(stack.bootstrap, linger_ms)
            warm_up(p, warmup)  # the producer's start-up belongs to the benchmark, not to the joiner
            sent[0] = produce_paced(p, rate, seconds, record_sender(p, topics))
            flush_records(p, topics, int(time.time() * 1000))
            p.flush(30)
            done.set()

        thread = threading.Thread(target=paced, daemon=True)
        thread.start()
        deadline = time.monotonic() + seconds + 60
        want = None

        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=100)
            now_ms = time.time() * 1000
            for msgs in batch.values():
                for m in msgs:
                    sent_ms = result_ts(m.value)
                    samples.append(now_ms - sent_ms)
                    timeline.append((sent_ms, now_ms - sent_ms))
                    legs.append((m.timestamp - sent_ms, now_ms - m.timestamp))
            if done.is_set():
                want = sent[0] if forwarder else expected_results(sent[0])
                if len(samples) >= want:
                    break
        else:
            raise TimeoutError(f"only {len(samples)} of {want} results")
        await consumer.stop()
        thread.join(timeout=5)
        await asyncio.sleep(1.5)  # operators write their statistics every second
        worker_latency = {} if forwarder else await worker_latency_ms(stack.redis_url, prefix, f"lat{u}")
    finally:
        stop_workers(procs)
    samples.sort()
    q = statistics.quantiles(samples, n=100) if len(samples) > 100 else [float("nan")] * 99
    per_second: dict[int, list[float]] = {}
    first = min((t for t, _ in timeline), default=0.0)
    for t, lat in timeline:
        per_second.setdefault(int((t - first) // 1000), []).append(lat)
    p99_by_second = [
        round(statistics.quantiles(v, n=100)[98]) if len(v) > 100 else round(max(v))
        for _, v in sorted(per_second.items())
    ]
    return {
        "worker": "bench/forwarder.py" if forwarder else "streamjoin joiner",
        "rate": rate,
        "producer_linger_ms": linger_ms,
        "seconds": seconds,
        "results": len(samples),
        "expected": float(want or 0),
        "p50_ms": q[49],
        "p99_ms": q[98],
        "max_ms": samples[-1] if samples else float("nan"),
        "p99_ms_by_second": p99_by_second,
        "input_hop_and_worker_ms": _p50_p99([a for a, _ in legs]),
        "produced_to_committed_ms": worker_latency,
        "output_hop_ms": _p50_p99([b for _, b in legs]),
    }


async def worker_latency_ms(redis_url: str, prefix: str, query: str) -> dict[str, float]:
    """Return p50/p99 (bucket upper bounds: coarse) of the operators' `latency_seconds` statistic,
    a batch's newest input Kafka timestamp (the producer's send time) to its commit, merged over
    partitions: the input hop plus the worker, as the worker sees it."""
    async with RegistryStore(redis_url, prefix=prefix) as reg:
        stats = await reg.read_stats(query)
    counts: dict[float, int] = {}
    for part in stats:
        for bound, cumulative in (part.operator.latency_seconds or {}).get("buckets", []):
            upper = math.inf if bound == "+Inf" else float(bound)
            counts[upper] = counts.get(upper, 0) + int(cumulative)
    total = counts.get(math.inf, 0)
    if not total:
        return {}
    bounds = sorted(counts)
    quantiles = (("p50", 0.5), ("p99", 0.99))
    return {name: 1000 * next(b for b in bounds if counts[b] >= q * total) for name, q in quantiles}


def _p50_p99(values: list[float]) -> dict[str, float]:
    if len(values) < 100:
        return {}
    q = statistics.quantiles(values, n=100)
    return {"p50": round(q[49], 1), "p99": round(q[98], 1)}
