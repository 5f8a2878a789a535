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
    python bench/joiner_throughput.py --records 300000 --skip-latency --py-spy worker.json

`--py-spy PATH` records worker 0 with py-spy (the `dev` extra) during the throughput run, idle
samples left out: a speedscope profile for a `.json` PATH, collapsed stacks (one line per stack
and its sample count) otherwise. py-spy pauses the worker for every sample, so that run is slower.

Every process it starts (broker, Redis, workers) is stopped at the end, also on failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, also when imported

from aiokafka import AIOKafkaConsumer

from joiner_throughput_harness import (
    PARTITIONS,
    STREAMS,
    cpu_seconds,
    expected_results,
    output_count,
    preload,
    query_json,
    record_profile,
    redis_command_stats,
    redis_used,
    register,
    stack_pids,
    start_workers,
    stop_workers,
    thread_cpu_seconds,
    wait_running,
)
from joiner_throughput_latency import latency
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.topics import TopicSpec, create_topics


async def throughput(
    stack: EmbeddedStack,
    workdir: Path,
    workers: int,
    n: int,
    worker_args: Sequence[str],
    profile: Path | None = None,
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
    # INFO: each operator logs where its loop's time went when it stops (`loop_phases` below)
    procs = start_workers(stack, workdir, workers, prefix, f"bench-{u}", worker_args, log_level="INFO")
    spy = record_profile(procs[0].pid, profile) if profile is not None and procs[0].pid else None
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
        if spy is not None:  # it writes the profile once the worker has exited
            try:
                spy.wait(timeout=60)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()
    phases = loop_phases([p.log_path for p in procs])
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
        # seconds the operators' loops waited per phase, summed over the operators (4 per worker)
        "loop_phases_s": phases,
        # one EVALSHA per committed batch (plus the few claims): batch size and Redis time per batch
        "redis_scripts": {
            "calls": int(scripts.get("calls", 0)),
            "records_per_call": round(n / max(scripts.get("calls", 0), 1), 1),
            "us_per_call": scripts.get("usec_per_call", 0.0),
        },
    }


_PHASES = re.compile(
    r"loop phases over (\d+) batches: fetch ([\d.]+) s, build ([\d.]+) s, "
    r"commit ([\d.]+) s, backpressure ([\d.]+) s"
)


def loop_phases(logs: Sequence[Path]) -> dict[str, float]:
    """Sum the phase breakdowns the operators logged when they stopped (`batch_loop.LoopPhases`)."""
    names = ("batches", "fetch", "build", "commit", "backpressure")
    total = dict.fromkeys(names, 0.0)
    for log in logs:
        for match in _PHASES.finditer(log.read_text(errors="replace")):
            for name, value in zip(names, match.groups(), strict=True):
                total[name] += float(value)
    return {name: round(value, 2) for name, value in total.items()}


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
        "--rounds",
        type=int,
        default=1,
        help="throughput runs on the same broker and Redis, each on fresh topics and workers: the "
        "first one also pays the broker's warm-up (a JVM compiling its code)",
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        metavar="PATH",
        help="profile worker 0 during the throughput run: speedscope if PATH ends in .json, else "
        "collapsed stacks",
    )
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
        for round_no in range(0 if args.skip_throughput else args.rounds):
            profile = args.py_spy if round_no == args.rounds - 1 else None
            tp = await throughput(stack, workdir, args.workers, args.records, args.worker_arg, profile)
            print(json.dumps({"workers": args.workers, "round": round_no + 1, "throughput": tp}), flush=True)
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
