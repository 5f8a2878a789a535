"""Count a workload's results with streamjoin's joiner through the embedded broker and Redis.

    python -m bench.peers.joiner_job DIRECTORY --expect N [--workers 1] [--stall-s 60]

Reuses bench/joiner_throughput.py's machinery: starts the embedded stack, produces the workload's
events into one topic (one partition) per stream plus one far-future record per stream that joins
nothing (it moves the watermark past the last records), registers the query at `earliest`, and
measures from "running" until the output topic holds `--expect` results (or stops growing for
`--stall-s` seconds). The figures are the worker's, the broker's and Redis' CPU over that span and
the span itself (stack start-up and the preload are left out). Prints one JSON line with results,
wall_s, cpu_s, peak_rss_kb, last_result_s (when the output last grew, from "running") and
last_gap_s (how long it had been still before that), resumed (each time it grew again after 2 s
still: when, from what count to what), the operator's counters and the worker logs' directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
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
from streamjoin.topics import TopicSpec, create_topics, load_catalog

__all__ = ["main"]

_STALL_S = 60.0
"""The default `--stall-s`: how long the output may stay still before the run gives up. Longer than
every peers workload's idle timeout (golab5's: 30 s), so a tail the idle timeout released is
counted, and shows as `last_gap_s`, instead of looking like a loss."""
_PAUSE_S = 2.0
"""Output growth after this long still is listed in `resumed` (an idle timeout releasing results)."""
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


async def _dump(consumer: AIOKafkaConsumer, tp: TopicPartition, count: int, path: Path) -> None:
    """Write the first `count` values of `tp` to `path`, one a line."""
    consumer.assign([tp])
    await consumer.seek_to_beginning(tp)
    with path.open("wb") as out:
        seen = 0
        while seen < count:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=10_000)
            for message in batch.get(tp, []):
                out.write((message.value or b"") + b"\n")
                seen += 1


async def _operator_counts(redis_url: str, prefix: str, name: str) -> dict[str, Any]:
    """Return the operator's published counters (records in, late, dead letters, watermark...)."""
    async with RegistryStore(redis_url, prefix=prefix) as reg:
        stats = await reg.read_stats(name)
    keep = ("records_in", "results", "published", "late", "dead_letters", "buffered", "watermark")
    return {k: getattr(s.operator, k) for s in stats for k in keep}


async def measure(directory: Path, expect: int, workers: int, stall_s: float = _STALL_S) -> dict[str, Any]:
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
        create_topics(stack.bootstrap, [*load_catalog(), *(TopicSpec(t, "internal", 1) for t in topics)])
        await asyncio.to_thread(preload, stack.bootstrap, query, directory / "events.jsonl")
        prefix = f"peers{u}:"
        procs = start_workers(stack, workdir, workers, prefix, f"peers-{u}", [])
        try:
            await register(stack.redis_url, prefix, query)
            started = await wait_running(stack.redis_url, prefix, name)
            pids = {**stack_pids(stack), **{p.name: p.pid for p in procs}}
            before = {n: cpu_seconds(pid) for n, pid in pids.items()}
            consumer = AIOKafkaConsumer(bootstrap_servers=stack.bootstrap)
            exact = stack.listed_ends_exact
            await consumer.start()
            try:
                tp = TopicPartition(output, 0)
                got, changed, last_gap = 0, time.monotonic(), 0.0
                resumed: list[list[float]] = []  # [s from running, results before, after] after a pause
                while got < expect and time.monotonic() - changed < stall_s:
                    await asyncio.sleep(0.1)
                    now = (await end_offsets(consumer, [tp], exact=exact))[tp]
                    if now != got:
                        moment = time.monotonic()
                        if got and moment - changed > _PAUSE_S:
                            resumed.append([round(moment - started, 1), got, now])
                        got, changed, last_gap = now, moment, moment - changed
                wall = time.monotonic() - started
                cpu = {n: cpu_seconds(pid) - before[n] for n, pid in pids.items()}
                await asyncio.sleep(1)  # anything beyond the expected count shows up as a mismatch
                got = (await end_offsets(consumer, [tp], exact=exact))[tp]
                if got != expect:  # keep the output to compare with the engine's, by id
                    await _dump(consumer, tp, got, workdir / "output.jsonl")
            finally:
                await consumer.stop()
            rss = sum(_hwm_kb(pid) for pid in pids.values())
            operator = await _operator_counts(stack.redis_url, prefix, name)
        finally:
            stop_workers(procs)
    return {
        "results": int(got),
        "wall_s": round(wall, 3),
        "cpu_s": round(sum(cpu.values()), 3),
        "cpu_s_by_process": {n: round(v, 2) for n, v in cpu.items()},
        "peak_rss_kb": rss,
        "last_result_s": round(changed - started, 3),
        "last_gap_s": round(last_gap, 3),
        "resumed": resumed,
        "operator": operator,
        "logs": str(workdir),
    }


def main() -> None:
    """Print the joiner's figures on DIRECTORY's workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--expect", type=int, required=True, help="the result count to wait for")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--stall-s",
        type=float,
        default=_STALL_S,
        help="give up when the output has not grown for this long (seconds)",
    )
    args = parser.parse_args()
    figures = asyncio.run(measure(args.directory, args.expect, args.workers, args.stall_s))
    if dead := figures["operator"].get("dead_letters"):
        # The workloads are well formed: a dead letter is a flushing record the joiner refused.
        print(f"joiner_job: {dead} record(s) dead-lettered: the flush did not happen", file=sys.stderr)
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
