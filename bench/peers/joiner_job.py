"""Count a workload's results with streamjoin's joiner through the embedded broker and Redis.

    python -m bench.peers.joiner_job DIRECTORY --expect N [--workers 1]

Reuses bench/joiner_throughput.py's machinery: starts the embedded stack, produces the workload's
events into one topic (one partition) per stream plus one far-future record per stream that joins
nothing (it moves the watermark past the last records), registers the query at `earliest`, and
measures from "running" until the output topic holds `--expect` results (or stops growing for
30 s). The figures are the worker's, the broker's and Redis' CPU over that span and the span
itself (stack start-up and the preload are left out). Prints one JSON line with results, wall_s,
cpu_s and peak_rss_kb.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from bench.joiner_throughput_harness import (
    cpu_seconds,
    producer,
    register,
    stack_pids,
    start_workers,
    stop_workers,
)

from streamjoin.dev.stack import EmbeddedStack
from streamjoin.kafka import end_offsets
from streamjoin.registry import RegistryStore
from streamjoin.topics import TopicSpec, create_topics

__all__ = ["main"]

_STALL_S = 30
_FLUSH_AHEAD = 10**8
"""How far past the last record the flushing records lie (28 hours in ms)."""


def _hwm_kb(pid: int | None) -> int:
    if pid is None:
        return 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def preload(bootstrap: str, query: dict[str, Any], events: Path) -> None:
    """Produce the events, then one far-future record per stream with keys no other stream has."""
    topics = {i["stream"]: i["topic"] for i in query["inputs"]}
    p = producer(bootstrap)
    last_ts = 0
    with events.open("rb") as lines:
        for line in lines:
            event = json.loads(line)
            last_ts = max(last_ts, event["record"]["ts"])
            value = json.dumps(event["record"], separators=(",", ":")).encode()
            while True:
                try:
                    p.produce(topics[event["stream"]], value, partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
    fields: dict[str, set[str]] = {}
    for operand, _op, other in query["where"]:
        for side in (operand, other):
            stream, _, field = side.partition(".")
            fields.setdefault(stream, set()).add(field)
    for i, (stream, topic) in enumerate(topics.items()):
        # Past every window, yet within the joiner's `max_future` (7 days of ms) of the watermark: a
        # record further ahead is dead-lettered, and the last results then waited for the idle
        # timeout (22 s of golab5's 30 at a quarter scale).
        record = {"ts": last_ts + _FLUSH_AHEAD, **dict.fromkeys(fields.get(stream, ()), -(i + 1))}
        p.produce(topic, json.dumps(record).encode(), partition=0)
    p.flush(300)


async def wait_running(redis_url: str, prefix: str, name: str) -> float:
    """Wait until the query's partition (one per partition number, here 0) runs; return the time."""
    deadline = time.monotonic() + 120
    async with RegistryStore(redis_url, prefix=prefix) as reg:
        while time.monotonic() < deadline:
            if any(s.state == "running" for s in await reg.read_status(name)):
                return time.monotonic()
            await asyncio.sleep(0.05)
    raise TimeoutError("query not running")


async def measure(directory: Path, expect: int, workers: int) -> dict[str, Any]:
    """Run the workload through the joiner; return its figures."""
    workdir = Path(tempfile.mkdtemp(prefix="peers-joiner-"))
    query = json.loads((directory / "query.json").read_text())
    u = uuid.uuid4().hex[:6]
    for i in query["inputs"]:
        i["topic"] = f"peers.{i['stream']}.{u}"
    query["output"]["topic"] = output = f"peers.out.{u}"
    query["name"] = name = f"{query['name']}{u}"
    query["start"] = "earliest"
    with EmbeddedStack(workdir=workdir / "stack") as stack:
        topics = [i["topic"] for i in query["inputs"]] + [output]
        create_topics(stack.bootstrap, [TopicSpec(t, "internal", 1) for t in topics])
        await asyncio.to_thread(preload, stack.bootstrap, query, directory / "events.jsonl")
        prefix = f"peers{u}:"
        procs = start_workers(stack, workdir, workers, prefix, f"peers-{u}", [])
        try:
            await register(stack.redis_url, prefix, query)
            started = await wait_running(stack.redis_url, prefix, name)
            pids = {**stack_pids(stack), **{p.name: p.pid for p in procs}}
            before = {n: cpu_seconds(pid) for n, pid in pids.items()}
            consumer = AIOKafkaConsumer(bootstrap_servers=stack.bootstrap)
            await consumer.start()
            try:
                tp = TopicPartition(output, 0)
                got, changed = 0, time.monotonic()
                while got < expect and time.monotonic() - changed < _STALL_S:
                    await asyncio.sleep(0.1)
                    now = (await end_offsets(consumer, [tp]))[tp]
                    if now != got:
                        got, changed = now, time.monotonic()
                wall = time.monotonic() - started
                cpu = {n: cpu_seconds(pid) - before[n] for n, pid in pids.items()}
                await asyncio.sleep(1)  # anything beyond the expected count shows up as a mismatch
                got = (await end_offsets(consumer, [tp]))[tp]
            finally:
                await consumer.stop()
            rss = sum(_hwm_kb(pid) for pid in pids.values())
        finally:
            stop_workers(procs)
    return {
        "results": int(got),
        "wall_s": round(wall, 3),
        "cpu_s": round(sum(cpu.values()), 3),
        "cpu_s_by_process": {n: round(v, 2) for n, v in cpu.items()},
        "peak_rss_kb": rss,
    }


def main() -> None:
    """Print the joiner's figures on DIRECTORY's workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--expect", type=int, required=True, help="the result count to wait for")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.directory, args.expect, args.workers))), flush=True)


if __name__ == "__main__":
    main()
