"""End-to-end joiner benchmark: throughput and latency through the embedded broker and Redis.

A 3-way equi-join (a.k = b.k = c.k, range windows of 1 s) where each key gets two records per stream
within a millisecond, so 6 input records make 8 results (about 1.3 per input record).

1. Throughput: N records are produced into the inputs first; the query is registered with
   `start: "earliest"` and the workers process the backlog as fast as they can: input records/s =
   N / (time from "running" until the last result is in the output topic).
2. Latency: a fresh query at `latest`; records are produced at a fixed rate (default: half the
   measured throughput) with `ts` = produce time (ms); a consumer reads the results and records
   receive time - `ts` (the youngest component's produce time): p50 / p99.

    python bench/joiner_throughput.py --records 300000 --workers 1
    python bench/joiner_throughput.py --records 300000 --workers 2

Every process it starts (broker, Redis, workers) is stopped at the end, also on failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from confluent_kafka import Producer

from streamjoin.dev.process import ManagedProcess
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.kafka import end_offsets
from streamjoin.query import parse_query
from streamjoin.registry import QueryRecord, RegistryStore, StreamRecord
from streamjoin.topics import TopicSpec, create_topics

PARTITIONS = 4
STREAMS = "abc"


def query_json(name: str, topics: dict[str, str], output: str, start: str) -> dict[str, Any]:
    """Return the benchmark query."""
    return {
        "name": name,
        "inputs": [
            # records are written to partition k % PARTITIONS: keyed by k, read directly (not re-keyed)
            {"stream": s, "topic": topics[s], "timestamp": "ts", "key": "k", "window": {"range": 1000}}
            for s in STREAMS
        ],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": output},
        "start": start,
    }


def record(i: int, ts: int) -> tuple[str, int, bytes]:
    """Return (stream, partition, value) of record i: key i // 6, streams a b c a b c."""
    k = i // 6
    return (
        STREAMS[i % 3],
        k % PARTITIONS,
        b'{"ts":%d,"k":%d,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}' % (ts, k),
    )


def flush_records(p: Producer, topics: dict[str, str], ts: int) -> None:
    """Produce one far-future record per stream and partition (keys joining nothing): moves every
    partition's watermark past the records before it."""
    for j, stream in enumerate(STREAMS):
        for part in range(PARTITIONS):
            k = 10**9 + (j + 1) * 100 * PARTITIONS + part
            p.produce(topics[stream], b'{"ts":%d,"k":%d}' % (ts, k), partition=part)


def producer(bootstrap: str, linger_ms: int = 5) -> Producer:
    """Return a fast idempotent producer."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": linger_ms,
            "batch.size": 1 << 20,
            "queue.buffering.max.messages": 2_000_000,
        }
    )


def preload(bootstrap: str, topics: dict[str, str], n: int) -> None:
    """Produce n records (10 per ms of event time) as fast as possible."""
    p = producer(bootstrap)
    for i in range(n):
        stream, part, value = record(i, i // 10)
        while True:
            try:
                p.produce(topics[stream], value, partition=part)
                break
            except BufferError:
                p.poll(0.01)
    flush_records(p, topics, n + 10**9)
    p.flush(120)


async def register(redis_url: str, prefix: str, q: dict[str, Any]) -> None:
    """Register streams and query."""
    async with RegistryStore(redis_url, prefix=prefix) as reg:
        streams = [
            StreamRecord(name=i["stream"], topic=i["topic"], timestamp="ts", key=i.get("key"))
            for i in q["inputs"]
        ]
        for s in streams:
            if await reg.get_stream(s.name) is None:
                await reg.create_stream(s)
        now = time.time()
        await reg.create_query(QueryRecord.of(parse_query(q), at=now), streams=streams)


async def wait_running(redis_url: str, prefix: str, name: str, timeout_s: float = 120) -> float:
    """Wait until every partition runs; return the time."""
    deadline = time.monotonic() + timeout_s
    async with RegistryStore(redis_url, prefix=prefix) as reg:
        while time.monotonic() < deadline:
            if len([s for s in await reg.read_status(name) if s.state == "running"]) >= PARTITIONS:
                return time.monotonic()
            await asyncio.sleep(0.05)
    raise TimeoutError("query not running")


async def output_count(consumer: AIOKafkaConsumer, topic: str) -> int:
    """Return the number of records in the output topic (the embedded broker's ListOffsets lags)."""
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    return int(sum((await end_offsets(consumer, tps)).values()))


def result_ts(value: bytes) -> int:
    """Return the top-level `ts` of an output record without decoding it (the benchmark shares 2
    cores with the worker: `json.loads` of every result took CPU the worker then lacked)."""
    start = value.index(b',"ts":') + 6  # the value starts {"query":...,"ts":
    return int(value[start : value.index(b",", start)])


def _cpu_of(stat: Path, *, children: bool) -> float:
    """Return the user + system CPU seconds in a /proc `stat` file (and its waited-for children's)."""
    fields = stat.read_text().rpartition(")")[2].split()  # fields from the state on, after `(comm)`
    return sum(int(f) for f in fields[11 : 15 if children else 13]) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int | None) -> float:
    """Return the CPU seconds of process `pid` and its waited-for children (Linux)."""
    return 0.0 if pid is None else _cpu_of(Path(f"/proc/{pid}/stat"), children=True)


def thread_cpu_seconds(pid: int | None) -> dict[str, float]:
    """Return CPU seconds per thread of `pid`: "main" for the main thread, else the thread's name."""
    out: dict[str, float] = {}
    if pid is None:
        return out
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            seconds = _cpu_of(task / "stat", children=False)
            name = "main" if int(task.name) == pid else (task / "comm").read_text().strip()
        except FileNotFoundError:  # the thread ended
            continue
        out[name] = out.get(name, 0.0) + seconds
    return out


def stack_pids(stack: EmbeddedStack) -> dict[str, int | None]:
    """Return the pid of each embedded service (broker, Redis)."""
    return {s.name: (s.process.pid if s.process is not None else None) for s in stack.services}


def expected_results(n: int) -> int:
    """Return the results of the first n records (8 per complete key)."""
    return 8 * (n // 6)


async def throughput(
    stack: EmbeddedStack, workdir: Path, workers: int, n: int, worker_args: Sequence[str]
) -> dict[str, Any]:
    """Measure the maximum sustained input rate; return the figures."""
    u = uuid.uuid4().hex[:6]
    topics = {s: f"bench.{s}.{u}" for s in STREAMS}
    output = f"bench.out.{u}"
    create_topics(stack.bootstrap, [TopicSpec(t, "internal", PARTITIONS) for t in [*topics.values(), output]])
    t0 = time.monotonic()
    await asyncio.to_thread(preload, stack.bootstrap, topics, n)
    produce_rate = n / (time.monotonic() - t0)
    prefix = f"bench{u}:"
    procs = start_workers(stack, workdir, workers, prefix, f"bench-{u}", worker_args)
    try:
        await register(stack.redis_url, prefix, query_json(f"tp{u}", topics, output, "earliest"))
        started = await wait_running(stack.redis_url, prefix, f"tp{u}")
        pids = {**stack_pids(stack), **{p.name: p.pid for p in procs}}
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        await redis_command_stats(stack.redis_url, reset=True)
        threads_before = thread_cpu_seconds(procs[0].pid)
        want = expected_results(n)
        consumer = AIOKafkaConsumer(bootstrap_servers=stack.bootstrap)
        await consumer.start()
        try:
            while True:
                got = await output_count(consumer, output)
                if got >= want:
                    break
                if time.monotonic() - started > 600:
                    raise TimeoutError(f"only {got} of {want} results")
                await asyncio.sleep(0.1)
            elapsed = time.monotonic() - started
            cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
            threads = {
                name: round(value - threads_before.get(name, 0.0), 2)
                for name, value in thread_cpu_seconds(procs[0].pid).items()
                if value - threads_before.get(name, 0.0) > 0.05
            }
        finally:
            await consumer.stop()
        used = await redis_used(stack.redis_url)
        scripts = (await redis_command_stats(stack.redis_url)).get("evalsha", {})
    finally:
        stop_workers(procs)
    return {
        "records": n,
        "results": want,
        "seconds": elapsed,
        "input_per_s": n / elapsed,
        "results_per_s": want / elapsed,
        "preload_per_s": produce_rate,
        "cpu_seconds": cpu,
        "worker_0_threads_cpu_seconds": threads,
        "input_per_worker_cpu_s": n / max(sum(v for k, v in cpu.items() if k.startswith("joiner")), 1e-9),
        "redis_used_memory": used,
        # one EVALSHA per committed batch (plus the few claims): batch size and Redis time per batch
        "redis_scripts": {
            "calls": int(scripts.get("calls", 0)),
            "records_per_call": round(n / max(scripts.get("calls", 0), 1), 1),
            "us_per_call": scripts.get("usec_per_call", 0.0),
        },
    }


async def redis_command_stats(url: str, *, reset: bool = False) -> dict[str, dict[str, float]]:
    """Return Redis' per-command statistics (INFO commandstats) by command; `reset` zeroes them."""
    import redis.asyncio as aioredis

    client = aioredis.from_url(url)
    try:
        if reset:
            await client.config_resetstat()
            return {}
        info = await client.info("commandstats")
        return {name.removeprefix("cmdstat_"): stats for name, stats in info.items()}
    finally:
        await client.aclose()


async def redis_used(url: str) -> int:
    """Return Redis' used_memory."""
    from streamjoin.state.redis import RedisStateStore

    store = RedisStateStore(url)
    try:
        return await store.used_memory()
    finally:
        await store.aclose()


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
            # An idempotent producer holds its first records until it has a producer id (about 1 s
            # on the embedded broker): that start-up belongs to the benchmark, not to the joiner.
            p.produce(warmup, b"{}")
            p.flush(30)
            start = time.monotonic()
            i = 0
            total = int(rate * seconds)
            while i < total:  # every millisecond, the records that are due
                due = min(int((time.monotonic() - start) * rate) + 1, total)
                now_ms = int(time.time() * 1000)
                while i < due:
                    stream, part, value = record(i, now_ms)
                    p.produce(topics[stream], value, partition=part)
                    i += 1
                p.poll(0)
                time.sleep(0.001)
            flush_records(p, topics, int(time.time() * 1000) + 10**9)
            p.flush(30)
            sent[0] = i
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


def start_workers(
    stack: EmbeddedStack, workdir: Path, n: int, prefix: str, group: str, extra: Sequence[str]
) -> list[ManagedProcess]:
    """Start n joiner workers with `extra` arguments (`--worker-arg`)."""
    procs = []
    for i in range(n):
        argv = [
            sys.executable,
            "-c",
            "from streamjoin.cli.main import main; main()",
            "joiner",
            "--bootstrap",
            stack.bootstrap,
            "--redis-url",
            stack.redis_url,
            "--prefix",
            prefix,
            "--group",
            group,
            "--worker-id",
            f"{group}-{i}",
            "--log-level",
            "WARNING",
            *extra,
        ]
        proc = ManagedProcess(f"joiner-{i}", argv, log_path=workdir / f"{group}-{i}.log")
        proc.start()
        procs.append(proc)
    return procs


def start_forwarder(
    stack: EmbeddedStack, workdir: Path, topics: dict[str, str], output: str
) -> ManagedProcess:
    """Start `bench/forwarder.py` and wait until it is positioned."""
    script = Path(__file__).with_name("forwarder.py")
    log = workdir / "forwarder.log"
    argv = [sys.executable, str(script), stack.bootstrap, output, *topics.values()]
    proc = ManagedProcess("forwarder", argv, log_path=log)
    proc.start()
    deadline = time.monotonic() + 60
    while not (log.exists() and b"ready" in log.read_bytes()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the forwarder did not start: {log}")
        time.sleep(0.1)
    return proc


def stop_workers(procs: list[ManagedProcess]) -> None:
    """Stop the workers (SIGTERM, bounded wait, SIGKILL)."""
    for proc in procs:
        proc.stop(timeout_ms=10_000)


async def main() -> None:
    """Run the benchmark and print one JSON line per measurement."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--latency-rate", type=float, default=None, help="default: half the throughput")
    parser.add_argument("--latency-seconds", type=float, default=20)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument(
        "--worker-arg",
        action="append",
        default=[],
        help="pass to every worker, e.g. --worker-arg=--max-batch=1000",
    )
    parser.add_argument(
        "--producer-linger-ms",
        type=int,
        default=20,
        help="the paced producer's linger.ms: the embedded broker's cost grows with every stored "
        "batch, so tiny batches slow it down over a run (bench/broker_latency.py)",
    )
    parser.add_argument("--skip-throughput", action="store_true", help="needs --latency-rate")
    parser.add_argument(
        "--forwarder",
        action="store_true",
        help="also measure the latency with bench/forwarder.py (no join, no Redis) in place of the "
        "workers, on a fresh broker: the floor the embedded broker sets",
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="streamjoin-bench-"))
    with EmbeddedStack(workdir=workdir / "stack") as stack:
        rate = args.latency_rate
        if not args.skip_throughput:
            tp = await throughput(stack, workdir, args.workers, args.records, args.worker_arg)
            print(json.dumps({"workers": args.workers, "throughput": tp}), flush=True)
            rate = rate or tp["input_per_s"] / 2
        if not args.skip_latency:
            if rate is None:
                parser.error("--skip-throughput needs --latency-rate")
            lat = await latency(
                stack,
                workdir,
                args.workers,
                rate,
                args.latency_seconds,
                args.producer_linger_ms,
                args.worker_arg,
            )
            print(json.dumps({"workers": args.workers, "latency": lat}), flush=True)
    if args.forwarder and rate is not None:
        with EmbeddedStack(workdir=workdir / "forwarder-stack") as stack:
            lat = await latency(
                stack, workdir, 1, rate, args.latency_seconds, args.producer_linger_ms, [], forwarder=True
            )
            print(json.dumps({"workers": 0, "latency": lat}), flush=True)
    print(f"logs: {workdir}", file=sys.stderr)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # so every started process is stopped


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupt)
    asyncio.run(main())
