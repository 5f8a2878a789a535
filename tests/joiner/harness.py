"""Drive real joiner workers in tests: register a query, produce a workload, read the output, compare.

Workers run as subprocesses (`streamjoin joiner`), records are produced with confluent-kafka (the
broker's offsets come back in delivery reports, so the oracle sees exactly what was produced), and
the output is read with aiokafka.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer
from confluent_kafka import Producer

from streamjoin.dev.ports import LOOPBACK
from streamjoin.dev.process import ManagedProcess
from streamjoin.joiner.group_watch import EXIT_GROUP_STALLED
from streamjoin.query import QueryDef, parse_query
from streamjoin.registry import QueryRecord, RegistryStore, StreamRecord
from streamjoin.testing import Event, expected_results

__all__ = [
    "JoinerProcess",
    "Workload",
    "consume_output",
    "expected_ids",
    "make_workload",
    "produce",
    "register_query",
    "wait_running",
]


@dataclass
class Workload:
    """Records to produce: (stream, partition, record) in production order, plus the query."""

    query_json: dict[str, Any]
    items: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)

    @property
    def query(self) -> QueryDef:
        """Return the parsed query."""
        return parse_query(self.query_json)


def make_workload(
    *,
    name: str,
    topics: Mapping[str, str],
    output: str,
    partitions: int,
    per_stream: int,
    keys: int,
    seed: int,
    lateness: int = 0,
    evaluation: Mapping[str, Any] | None = None,
    expiration: Mapping[str, Any] | None = None,
    phases: Sequence[Mapping[str, float]] = (),
) -> Workload:
    """Return a 3-way join workload (a: range 60, b: rows 5, c: range 40) with a theta predicate.

    Keys decide partitions (`k % partitions`), so results never span partitions and every input
    declares `"key": "k"` (read directly, not re-keyed: docs/partitioning.md); timestamps grow per
    partition with disorder up to `lateness`, so no record is late; each partition ends with one
    far-future record per stream (distinct keys, joining nothing) that moves the watermark past
    everything else. `phases`: stream weights of consecutive parts of `per_stream * 3` records each
    (default: one part, streams equally likely).
    """
    rng = random.Random(seed)
    query = {
        "name": name,
        "inputs": [
            {"stream": "a", "topic": topics["a"], "timestamp": "ts", "key": "k", "window": {"range": 60}},
            {"stream": "b", "topic": topics["b"], "timestamp": "ts", "key": "k", "window": {"rows": 5}},
            {"stream": "c", "topic": topics["c"], "timestamp": "ts", "key": "k", "window": {"range": 40}},
        ],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"], ["a.v", ">=", "c.v"]],
        "output": {"topic": output},
        "lateness": lateness,
        "evaluation": dict(evaluation or {"mode": "eager"}),
        "expiration": dict(expiration or {"mode": "eager"}),
    }
    w = Workload(query)
    clock = dict.fromkeys(range(partitions), 0)
    weights = [[phase.get(s, 0.0) for s in "abc"] for phase in phases]
    for n in range(1, per_stream * 3 * max(len(weights), 1) + 1):
        phase = (n - 1) // (per_stream * 3)
        stream = rng.choices("abc", weights[phase])[0] if weights else rng.choice("abc")
        k = rng.randrange(keys)
        p = k % partitions
        clock[p] += rng.randint(0, 3)
        ts = max(clock[p] - rng.randint(0, lateness), 0)
        w.items.append((stream, p, {"ts": ts, "k": k, "v": rng.randint(0, 9), "n": n}))
    for p in range(partitions):
        for j, stream in enumerate("abc"):
            k = 1_000_000 + partitions * (j + 1) * 7 + p
            w.items.append((stream, p, {"ts": clock[p] + 1_000_000, "k": k, "v": 0, "n": -1}))
    return w


def produce(bootstrap: str, topics: Mapping[str, str], items: Sequence[tuple[str, int, Any]]) -> list[Event]:
    """Produce `items` (stream, partition, record or raw bytes) in order; return the events as written.

    Raw `bytes` values (malformed records) are produced but left out of the returned events.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    events: list[Event | None] = [None] * len(items)
    failures: list[str] = []

    def report(i: int, stream: str, record: Any) -> Any:
        def cb(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(str(err))
            elif not isinstance(record, bytes):
                events[i] = Event(stream, msg.partition(), msg.offset(), record["ts"], record)

        return cb

    for i, (stream, p, record) in enumerate(items):
        value = record if isinstance(record, bytes) else json.dumps(record).encode()
        while True:
            try:
                producer.produce(topics[stream], value, partition=p, on_delivery=report(i, stream, record))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(60)
    assert left == 0 and not failures, f"produce failed: {left} left, {failures[:3]}"
    return [e for e in events if e is not None]


class ChunkedProducer(threading.Thread):
    """Produce a workload in chunks with pauses, so crashes land while records keep arriving."""

    def __init__(
        self, bootstrap: str, topics: dict[str, str], w: Workload, chunks: int, pause_s: float
    ) -> None:
        super().__init__(daemon=True)
        self._args = (bootstrap, topics, w, chunks, pause_s)
        self.events: list[Event] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        bootstrap, topics, w, chunks, pause_s = self._args
        try:
            size = -(-len(w.items) // chunks)
            for start in range(0, len(w.items), size):
                self.events += produce(bootstrap, topics, w.items[start : start + size])
                time.sleep(pause_s)
        except BaseException as exc:
            self.error = exc


def expected_ids(query: QueryDef, events: Sequence[Event], *, rekeyed: bool = False) -> Counter[str]:
    """Return the ids of every result the oracle expects, computed per partition (inputs keyed by
    the join attribute), or over every partition at once (`rekeyed`: a result spans partitions)."""
    topics = [i.topic for i in query.inputs]
    by_partition: dict[int, list[Event]] = {}
    for e in events:
        by_partition.setdefault(0 if rekeyed else e.partition, []).append(e)
    ids: Counter[str] = Counter()
    for evs in by_partition.values():
        for key, count in expected_results(query, evs).items():
            ids["|".join(f"{topics[i]}:{part}:{off}" for i, (part, off) in enumerate(key))] += count
    return ids


async def register_query(redis_url: str, prefix: str, query_json: Mapping[str, Any]) -> None:
    """Register the query's streams and the query itself, as the control plane would."""
    async with RegistryStore(redis_url, prefix=prefix) as registry:
        streams = []
        for inp in query_json["inputs"]:
            record = StreamRecord(
                name=inp["stream"], topic=inp["topic"], timestamp=inp["timestamp"], key=inp.get("key")
            )
            if await registry.get_stream(record.name) is None:
                await registry.create_stream(record)
            streams.append(record)
        now = time.time()
        await registry.create_query(QueryRecord.of(parse_query(query_json), at=now), streams=streams)


async def wait_running(
    redis_url: str, prefix: str, query: str, partitions: int, timeout_s: float = 60
) -> None:
    """Wait until every partition of `query` reports `running`."""
    await wait_state(redis_url, prefix, query, partitions, "running", timeout_s=timeout_s)


async def wait_state(
    redis_url: str, prefix: str, query: str, partitions: int, state: str, *, timeout_s: float = 60
) -> None:
    """Wait until `partitions` partitions of `query` report `state`."""
    deadline = time.monotonic() + timeout_s
    async with RegistryStore(redis_url, prefix=prefix) as registry:
        while time.monotonic() < deadline:
            statuses = await registry.read_status(query)
            if len([s for s in statuses if s.state == state]) >= partitions:
                return
            await asyncio.sleep(0.2)
    raise TimeoutError(f"query {query} not {state} on {partitions} partitions after {timeout_s} s")


async def consume_output(
    bootstrap: str, topic: str, *, want: int, timeout_s: float, quiet_s: float = 2.0
) -> list[Any]:
    """Read `topic` from the start until `want` records arrived and nothing more came for `quiet_s`."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    records: list[Any] = []
    try:
        deadline = time.monotonic() + timeout_s
        last_new = time.monotonic()
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200, max_records=10_000)
            for msgs in batch.values():
                records.extend(msgs)
                last_new = time.monotonic()
            if len(records) >= want and time.monotonic() - last_new >= quiet_s:
                break
    finally:
        await consumer.stop()
    return records


def readiness(port: int) -> bool | None:
    """Return what a worker's `GET /readyz` on `port` says: True ready, False not ready, None no answer."""
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except urllib.error.HTTPError as exc:
        return False if exc.code == 503 else None
    except OSError:
        return None


def readyz(port: int) -> tuple[int, dict[str, Any]]:
    """Return a worker's `GET /readyz` on `port`: the status code and the JSON body (0 and the error
    when nothing answers)."""
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/readyz", timeout=2) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except OSError as exc:
        return 0, {"error": str(exc)}


async def wait_ready(port: int, timeout_s: float = 10) -> bool:
    """Wait until the worker's `GET /readyz` on `port` says ready; return whether it did in time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if readiness(port) is True:
            return True
        await asyncio.sleep(0.2)
    return False


_T = TypeVar("_T")


def run_scenario(
    joiner: JoinerProcess, scenario: Callable[[], Coroutine[Any, Any, _T]]
) -> tuple[_T, int | None]:
    """Run `scenario()` on a fresh event loop, then stop `joiner` whatever happened.

    Returns the scenario's result and the worker's exit code; a failure carries the tail of the
    worker's log, which is where the reason usually is.
    """
    try:
        result = asyncio.run(scenario())
    except Exception as exc:
        raise AssertionError(f"{exc}\n--- worker log ---\n{joiner.log_tail()}") from exc
    finally:
        code = joiner.stop()
    # Faust's default data directory would be `<group>-data/` in the working directory
    assert not Path(f"{joiner.group}-data").exists(), "the worker left a Faust data directory behind"
    return result, code


class JoinerProcess:
    """A `streamjoin joiner` subprocess with its own log file.

    Like compose and Kubernetes (restart policies), it starts the worker again when it exits with
    `EXIT_GROUP_STALLED` on its own (a worker the embedded broker's group left unassigned:
    docs/reliability.md); `restart_on_stall=False` leaves that to a caller that supervises workers
    itself (the fault runner's `Cluster.supervise`).
    """

    def __init__(
        self,
        workdir: Path,
        bootstrap: str,
        redis_url: str,
        *,
        group: str,
        prefix: str,
        name: str = "joiner",
        extra: Sequence[str] = (),
        launcher: Sequence[str] = (),
        restart_on_stall: bool = True,
    ) -> None:
        """`launcher`: an argv prefix running the worker elsewhere (`ip netns exec NS`, see dev.netns)."""
        self.name = name
        self.group = group
        self.argv = [
            *launcher, sys.executable, "-c", "from streamjoin.cli.main import main; main()", "joiner",
            "--bootstrap", bootstrap, "--redis-url", redis_url, "--group", group, "--prefix", prefix,
            "--session-timeout-ms", "6000", "--idle-timeout-ms", "60000", *extra,
        ]  # fmt: skip
        self.log_path = workdir / f"{name}.log"
        self.process: ManagedProcess | None = None
        self.starts = 0
        self.stall_restarts = 0
        self.worker_id = ""
        self._restart_on_stall = restart_on_stall
        self._held = False  # stopped or killed by the test: never started again by the watcher
        self._watcher: threading.Thread | None = None
        self._restarting = threading.RLock()  # a stop never races a restart (it stops the new one)

    def start(self) -> None:
        """Start (or restart) the worker."""
        self._held = False
        self.starts += 1
        self.worker_id = f"{self.name}-{self.starts}-{uuid.uuid4().hex[:6]}"
        self.process = ManagedProcess(
            self.name, [*self.argv, "--worker-id", self.worker_id], log_path=self.log_path
        )
        self.process.start()
        if self._restart_on_stall and (self._watcher is None or not self._watcher.is_alive()):
            self._watcher = threading.Thread(target=self._watch, name=f"{self.name}-restarts", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        """Start the worker again each time it exits with `EXIT_GROUP_STALLED` on its own."""
        while not self._held:
            process = self.process
            if process is not None and not process.running:
                with self._restarting:
                    code = process.stop(timeout_ms=0)  # reaps it
                    if self._held or code != EXIT_GROUP_STALLED:
                        return
                    self.stall_restarts += 1
                    self.start()
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the worker (and its group) at once."""
        assert self.process is not None and self.process.pid is not None
        import os
        import signal

        with self._restarting:
            self._held = True
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.stop(timeout_ms=2_000)

    def stop(self, timeout_ms: int = 10_000) -> int | None:
        """SIGTERM, bounded wait, SIGKILL; return the exit code."""
        with self._restarting:
            self._held = True
        return self.process.stop(timeout_ms=timeout_ms) if self.process is not None else None

    def log_tail(self, lines: int = 60) -> str:
        """Return the end of the worker's log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
