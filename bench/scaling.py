"""Scaling curve: input records/s and lag for 1-4 joiner workers, on one Redis and on a Redis Cluster.

For each Redis (the embedded single Redis; the embedded Redis Cluster of 3 primaries and 3 replicas,
commits not waiting for a replica) and each worker count (1 to `--max-workers`), on a fresh embedded
broker, the same workers run two queries one after the other:

1. **Throughput**: `--records` records of `bench/joiner_throughput.py`'s workload (3-way equi-join,
   4 partitions, 1.33 results per input record) are produced first; the workers drain the backlog
   from `earliest`: input records/s = records / (time from "every partition running" until the last
   result is in the output topic).
2. **Lag** at a fixed offered rate (`--rate` input records/s for `--seconds`, the same for every
   configuration): the time from a record's production to its last result in the output topic,
   p50 / p99 / max, and the p99 of each second (growing when the workers fall behind).

Everything runs on this one machine, whatever its cores (the figures say how many): the broker,
Redis (or the six cluster nodes), the workers and the benchmark share them, so past the core count
more workers add contention, not capacity. The load average is recorded around every run, since
the machine may be shared. Prints one JSON line per configuration and writes them all to
`bench/results/scaling-<date>.json`.

    python -m bench.scaling                          # 1-4 workers, single Redis and cluster
    python -m bench.scaling --records 100000 --rate 10000 --seconds 15 --redis single
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer
from bench.joiner_throughput_harness import (
    PARTITIONS,
    STREAMS,
    expected_results,
    flush_records,
    output_count,
    preload,
    producer,
    query_json,
    record_sender,
    register,
    result_ts,
    start_workers,
    stop_workers,
    wait_running,
)
from bench.pacing import produce_paced, warm_up

from streamjoin.dev.process import ManagedProcess
from streamjoin.dev.redis_cluster import EmbeddedRedisCluster
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.registry import RegistryStore
from streamjoin.topics import TopicSpec, create_topics

RESULTS = Path(__file__).with_name("results")


@dataclass(frozen=True)
class Target:
    """Where the workers run against: the broker's bootstrap and a Redis URL (single or cluster)."""

    bootstrap: str
    redis_url: str


def load() -> list[float]:
    """Return the 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def _topics(target: Target, u: str) -> tuple[dict[str, str], str]:
    topics = {s: f"scale.{s}.{u}" for s in STREAMS}
    output = f"scale.out.{u}"
    create_topics(
        target.bootstrap, [TopicSpec(t, "internal", PARTITIONS) for t in [*topics.values(), output]]
    )
    return topics, output


async def drain(target: Target, prefix: str, n: int) -> dict[str, Any]:
    """Produce `n` records, register a query reading them from `earliest`, time the workers draining them."""
    u = uuid.uuid4().hex[:6]
    topics, output = _topics(target, u)
    await asyncio.to_thread(preload, target.bootstrap, topics, n)
    await register(target.redis_url, prefix, query_json(f"sc{u}", topics, output, "earliest"))
    started = await wait_running(target.redis_url, prefix, f"sc{u}")
    want = expected_results(n)
    consumer = AIOKafkaConsumer(bootstrap_servers=target.bootstrap)
    await consumer.start()
    try:
        while (got := await output_count(consumer, output)) < want:
            if time.monotonic() - started > 300:
                raise TimeoutError(f"only {got} of {want} results")
            await asyncio.sleep(0.1)
        elapsed = time.monotonic() - started
    finally:
        await consumer.stop()
    async with RegistryStore(target.redis_url, prefix=prefix) as registry:  # the lag query's streams
        await registry.delete_query(f"sc{u}")  # are named alike, on other topics
        for stream in STREAMS:
            await registry.delete_stream(stream)
    return {"records": n, "seconds": round(elapsed, 2), "input_per_s": round(n / elapsed)}


async def lag(target: Target, prefix: str, rate: float, seconds: float) -> dict[str, Any]:
    """Produce at `rate` records/s for `seconds` (`ts` = produce time) into a fresh query at `latest`;
    return how long after its youngest input each result reached the output topic."""
    u = uuid.uuid4().hex[:6]
    topics, output = _topics(target, u)
    await register(target.redis_url, prefix, query_json(f"lag{u}", topics, output, "latest"))
    await wait_running(target.redis_url, prefix, f"lag{u}")
    consumer = AIOKafkaConsumer(
        output, bootstrap_servers=target.bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=5
    )
    await consumer.start()
    sent: list[int] = []

    def paced() -> None:
        p = producer(target.bootstrap, 20)
        warm_up(p, f"scale.warmup.{u}")  # the producer's start-up belongs to the benchmark, not the workers
        sent.append(produce_paced(p, rate, seconds, record_sender(p, topics)))
        flush_records(p, topics, int(time.time() * 1000))
        p.flush(30)

    thread = asyncio.create_task(asyncio.to_thread(paced))
    samples: list[tuple[float, float]] = []  # (produce time, lag) per result
    deadline = time.monotonic() + seconds + 120
    try:
        while not (thread.done() and len(samples) >= expected_results(sent[0])):
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(samples)} results")
            for msgs in (await consumer.getmany(timeout_ms=100)).values():
                now_ms = time.time() * 1000
                samples += [(ts, now_ms - ts) for ts in map(result_ts, (m.value for m in msgs))]
        await thread
    finally:
        await consumer.stop()
    lags = sorted(x for _, x in samples)
    q = statistics.quantiles(lags, n=100)
    first = min(t for t, _ in samples)
    by_second: dict[int, list[float]] = {}
    for t, x in samples:
        by_second.setdefault(int((t - first) // 1000), []).append(x)
    return {
        "rate": rate,
        "seconds": seconds,
        "results": len(samples),
        "p50_ms": round(q[49]),
        "p99_ms": round(q[98]),
        "max_ms": round(lags[-1]),
        "p99_ms_by_second": [round(statistics.quantiles(v, n=100)[98]) if len(v) > 100 else round(max(v))
                             for _, v in sorted(by_second.items())],
    }  # fmt: skip


async def measure(target: Target, workdir: Path, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    """Start `workers` workers; measure the throughput, then the lag, with the same workers."""
    load_before = load()
    prefix = f"scale{uuid.uuid4().hex[:6]}:"
    procs: list[ManagedProcess] = start_workers(target, workdir, workers, prefix, prefix[:-1], [])
    try:
        throughput = await drain(target, prefix, args.records)
        lagging = await lag(target, prefix, args.rate, args.seconds)
    finally:
        stop_workers(procs)
    return {
        "workers": workers,
        "throughput": throughput,
        "lag": lagging,
        "load_before": load_before,
        "load_after": load(),
    }


async def curve(redis: str, args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    """Measure 1..max workers against `redis` ("single" or "cluster"), each on a fresh broker."""
    rows = []
    cluster = EmbeddedRedisCluster() if redis == "cluster" else None
    try:
        if cluster is not None:
            cluster.start(workdir / "cluster")
        for workers in range(1, args.max_workers + 1):
            with EmbeddedStack(workdir=workdir / f"stack-{redis}-{workers}") as stack:
                url = cluster.url if cluster is not None else stack.redis_url
                assert url is not None
                row = {"redis": redis, **await measure(Target(stack.bootstrap, url), workdir, workers, args)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        if cluster is not None:
            cluster.stop()
    return rows


def summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """Return a plain-text table of the rows."""
    lines = ["redis    workers  input/s  vs 1 worker  lag p50/p99 ms  load before->after"]
    base: dict[str, float] = {}
    for r in rows:
        rate = r["throughput"]["input_per_s"]
        base.setdefault(r["redis"], rate)
        lag = r["lag"]
        lines.append(
            f"{r['redis']:8} {r['workers']:7} {rate:8} {rate / base[r['redis']]:11.2f}  "
            f"{lag['p50_ms']:6}/{lag['p99_ms']:<7} {r['load_before'][0]:5.2f} -> {r['load_after'][0]:.2f}"
        )
    return "\n".join(lines)


async def main() -> None:
    """Run the curve, print it, and write it to bench/results/scaling-<date>.json."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=150_000, help="backlog drained per configuration")
    parser.add_argument("--max-workers", type=int, default=4, help=f"at most {PARTITIONS} (the partitions)")
    parser.add_argument("--rate", type=float, default=10_000, help="offered input records/s for the lag")
    parser.add_argument("--seconds", type=float, default=15, help="length of the lag run")
    parser.add_argument("--redis", choices=["single", "cluster", "both"], default="both")
    parser.add_argument("--out", type=Path, default=None, help="default: bench/results/scaling-<date>.json")
    args = parser.parse_args()
    if not 1 <= args.max_workers <= PARTITIONS:
        parser.error(f"--max-workers must be 1..{PARTITIONS}: more workers than partitions idle")
    started = datetime.datetime.now(datetime.UTC)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "load_before": load()}
    workdir = Path(tempfile.mkdtemp(prefix="streamjoin-scaling-"))
    rows: list[dict[str, Any]] = []
    for redis in ["single", "cluster"] if args.redis == "both" else [args.redis]:
        rows += await curve(redis, args, workdir)
    machine["load_after"] = load()
    print(summary(rows))
    out = args.out or RESULTS / f"scaling-{started.date().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "started": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.datetime.now(datetime.UTC) - started).total_seconds()),
        "machine": machine,
        "partitions": PARTITIONS,
        "args": {k: v for k, v in vars(args).items() if k != "out"},
        "runs": rows,
    }
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written: {out}; logs: {workdir}", file=sys.stderr)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # so every started process is stopped


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupt)
    asyncio.run(main())
