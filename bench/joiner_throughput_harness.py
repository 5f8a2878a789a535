"""The machinery of the joiner benchmarks (`joiner_throughput.py`, `joiner_throughput_latency.py`,
`broker_latency.py`, `bench/peers`): the workload, producers, registration, CPU accounting, workers.

The workload: a 3-way equi-join (a.k = b.k = c.k, range windows of 1 s) where each key gets two
records per stream within a millisecond, so 6 input records make 8 results.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from confluent_kafka import Producer

from streamjoin.dev.process import ManagedProcess
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.kafka import end_offsets
from streamjoin.query import parse_query
from streamjoin.registry import QueryRecord, RegistryStore, StreamRecord

__all__ = [
    "record_profile",
    "FLUSH_AHEAD_MS",
    "PARTITIONS",
    "STREAMS",
    "cpu_seconds",
    "expected_results",
    "flush_records",
    "output_count",
    "preload",
    "producer",
    "query_json",
    "record",
    "record_sender",
    "redis_command_stats",
    "redis_used",
    "register",
    "result_ts",
    "stack_pids",
    "start_forwarder",
    "start_workers",
    "stop_workers",
    "thread_cpu_seconds",
    "wait_running",
]

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


def record_sender(p: Producer, topics: dict[str, str]) -> Callable[[int, int], None]:
    """Return `send(i, ts)`: produce `record(i, ts)` to its stream's topic (`pacing.produce_paced`)."""

    def send(i: int, ts: int) -> None:
        stream, part, value = record(i, ts)
        p.produce(topics[stream], value, partition=part)

    return send


FLUSH_AHEAD_MS = 60_000
"""How far past the last record the flush records are: past its 1 s windows, and well inside the
joiner's `max_future` (7 days; a record further ahead is dead-lettered and moves nothing)."""


def flush_records(p: Producer, topics: dict[str, str], last_ts: int) -> None:
    """Produce one record per stream and partition `FLUSH_AHEAD_MS` after `last_ts` (keys joining
    nothing): moves every partition's watermark past the records before it."""
    ts = last_ts + FLUSH_AHEAD_MS
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
    flush_records(p, topics, (n - 1) // 10)  # record i has ts i // 10
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
    """Return the number of records in the output topic (read from a fetch response: the embedded
    broker's ListOffsets lags, and this serves both brokers)."""
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    return int(sum((await end_offsets(consumer, tps, exact=False)).values()))


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


def start_workers(
    stack: EmbeddedStack,
    workdir: Path,
    n: int,
    prefix: str,
    group: str,
    extra: Sequence[str],
    log_level: str = "WARNING",
) -> list[ManagedProcess]:
    """Start n joiner workers with `extra` arguments (`--worker-arg`), logging to workdir/group-i.log."""
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
            log_level,
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


def record_profile(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """Start py-spy recording process `pid` into `out` until it exits: 250 samples a second, every
    thread, idle samples left out; a speedscope profile for a `.json` `out`, collapsed stacks
    otherwise. In a session of its own: a SIGTERM to the caller's process group would end it before
    it writes the profile."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    kind = "speedscope" if out.suffix == ".json" else "raw"
    argv = [spy, "record", "--pid", str(pid), "--rate", "250", "--threads", "--format", kind,
            "--output", str(out)]  # fmt: skip
    return subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
