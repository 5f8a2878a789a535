"""A registration flood beside a running query: the running query's result latency before, during and
after N registrations (and their deletion), the 429s the admission gave, and how long the workers
took to lay the flood out and tear it down (docs/joiner.md, "Laying queries out, and tearing them
down").

    python bench/flood.py --queries 200 --workers 2   # the probe's storm; prints the figures as JSON

A probe pair (`a`, `b` with one new key, each carrying its send time) is produced every 200 ms to the
running query `live`; a result's latency is when it was read minus the later send time of its two
records. The flood's queries join the same streams on another field, so each one re-keys both inputs
(two internal topics, one repartitioner per source partition): what a user's ad-hoc queries cost.
A client refused with 429 waits its `Retry-After` and tries again, as a user would.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Producer

__all__ = ["FloodFigures", "LatencyProbe", "flood", "main", "summary"]

LIVE_CQL = "SELECT * FROM a [RANGE 10000], b [RANGE 10000] WHERE a.k = b.k"
FLOOD_CQL = "SELECT * FROM a [RANGE 1000], b [RANGE 1000] WHERE a.v = b.v"


def summary(latencies_ms: Sequence[float]) -> dict[str, float]:
    """Return count, p50, p95 and max of `latencies_ms` (zeros when empty)."""
    if not latencies_ms:
        return {"n": 0, "p50": 0.0, "p95": 0.0, "max": 0.0}
    ordered = sorted(latencies_ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"n": len(ordered), "p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


class LatencyProbe:
    """Produce a joining pair every `interval_s` and time each result of `output` (threads)."""

    def __init__(self, bootstrap: str, topics: dict[str, str], output: str, interval_s: float = 0.2) -> None:
        self._bootstrap = bootstrap
        self._topics = topics
        self._output = output
        self._interval_s = interval_s
        self._stop = threading.Event()
        self.samples: list[tuple[float, float]] = []
        """(read at, unix s; latency, ms) of each result."""
        self.sent = 0
        self._threads = [
            threading.Thread(target=self._produce, name="probe-produce", daemon=True),
            threading.Thread(target=lambda: asyncio.run(self._consume()), name="probe-read", daemon=True),
        ]

    def start(self) -> None:
        """Start producing and reading."""
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Stop both threads."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout=15)

    def between(self, start: float, end: float) -> list[float]:
        """Return the latencies (ms) of the results read between `start` and `end` (unix s)."""
        return [lat for at, lat in list(self.samples) if start <= at < end]

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self._bootstrap, "linger.ms": 0})
        key = 0
        while not self._stop.is_set():
            key += 1
            now_ms = time.time() * 1000
            for stream in ("a", "b"):
                record = {"k": key, "v": -key, "ts": int(now_ms), "sent": now_ms}
                producer.produce(self._topics[stream], json.dumps(record).encode(), key=str(key).encode())
            producer.flush(5)
            self.sent += 1
            self._stop.wait(self._interval_s)
        producer.flush(5)

    async def _consume(self) -> None:
        consumer = AIOKafkaConsumer(
            self._output, bootstrap_servers=self._bootstrap, group_id=None, auto_offset_reset="latest"
        )
        await consumer.start()
        try:
            while not self._stop.is_set():
                batch = await consumer.getmany(timeout_ms=100)
                now = time.time()
                for records in batch.values():
                    for r in records:
                        tuples = json.loads(r.value)["tuples"]
                        sent = max(t["sent"] for t in tuples.values())
                        self.samples.append((now, now * 1000 - sent))
        finally:
            await consumer.stop()


@dataclass
class FloodFigures:
    """What one flood measured (times in seconds, latencies in ms)."""

    queries: int
    before: dict[str, float]
    during: dict[str, float]
    after: dict[str, float]
    refused_429: int = 0
    other_errors: list[str] = field(default_factory=list)
    register_s: float = 0.0
    """From the first POST until every flood query was registered."""
    running_s: float | None = None
    """From the first POST until every flood query ran (None: not within the timeout)."""
    delete_s: float = 0.0
    settled_s: float | None = None
    """From the first DELETE until a query registered after them ran (the workers follow the registry)."""
    gaps_s: float = 0.0
    """The longest time without any result of the running query while probes were sent."""


def _statuses(client: httpx.Client) -> dict[str, str]:
    return {q["name"]: q["status"] for q in client.get("/v1/queries").json()}


def _wait(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def _register_all(client: httpx.Client, bodies: list[dict[str, Any]], figures: FloodFigures) -> None:
    """POST every body from 8 clients at once; a 429 waits its Retry-After and tries again."""

    async def one(c: httpx.AsyncClient, body: dict[str, Any]) -> None:
        while True:
            try:
                r = await c.post("/v1/queries", json=body)
            except httpx.TransportError:  # a kept-alive connection the server closed meanwhile
                await asyncio.sleep(1)
                continue
            if r.status_code == 429:
                figures.refused_429 += 1
                await asyncio.sleep(float(r.headers.get("Retry-After", "1")))
                continue
            if r.status_code != 201:
                figures.other_errors.append(f"{r.status_code} {r.text[:200]}")
            return

    async def go() -> None:
        slots = asyncio.Semaphore(8)
        async with httpx.AsyncClient(base_url=str(client.base_url), headers=client.headers, timeout=60) as c:

            async def bounded(body: dict[str, Any]) -> None:
                async with slots:
                    await one(c, body)

            await asyncio.gather(*(bounded(b) for b in bodies))

    asyncio.run(go())


def flood(
    client: httpx.Client,
    bootstrap: str,
    topics: dict[str, str],
    *,
    queries: int,
    baseline_s: float = 10.0,
    running_timeout_s: float = 300.0,
    tag: str = "",
) -> FloodFigures:
    """Run the flood against the API of `client` (streams `a` and `b` on `topics` registered, no
    query yet); return the figures."""
    tag = tag or uuid.uuid4().hex[:6]
    live_output = f"flood.live.{tag}"
    live = {"name": "live", "cql": LIVE_CQL, "output": {"topic": live_output}}
    if (answer := client.post("/v1/queries", json=live)).status_code != 201:
        raise RuntimeError(f"registering the live query failed: {answer.status_code} {answer.text}")
    if not _wait(lambda: _statuses(client).get("live") == "running", 120):
        raise RuntimeError(f"the live query never ran: {_statuses(client)}")
    probe = LatencyProbe(bootstrap, topics, live_output)
    probe.start()
    try:
        time.sleep(baseline_s)
        t0 = time.time()
        names = [f"flood-{i}" for i in range(queries)]
        bodies = [{"name": n, "cql": FLOOD_CQL, "output": {"topic": f"flood.{tag}.{n}"}} for n in names]
        figures = FloodFigures(queries, summary(probe.between(t0 - baseline_s, t0)), {}, {})
        _register_all(client, bodies, figures)
        figures.register_s = time.time() - t0
        everything = set(names)
        if _wait(lambda: {n for n, s in _statuses(client).items() if s == "running"} >= everything,
                 running_timeout_s):  # fmt: skip
            figures.running_s = time.time() - t0
        t1 = time.time()
        for n in names:
            client.delete(f"/v1/queries/{n}")
        figures.delete_s = time.time() - t1
        after = {"name": "after", "cql": LIVE_CQL, "output": {"topic": f"flood.after.{tag}"}}
        client.post("/v1/queries", json=after)
        if _wait(lambda: _statuses(client).get("after") == "running", running_timeout_s):
            figures.settled_s = time.time() - t1
        # The deleted queries' topics go in a delayed sweep: "after" starts once that had time to pass.
        time.sleep(baseline_s)
        t2 = time.time()
        time.sleep(baseline_s)
        figures.during = summary(probe.between(t0, t2))
        figures.after = summary(probe.between(t2, time.time()))
        reads = sorted(at for at, _ in probe.samples if at >= t0 - baseline_s)
        figures.gaps_s = max((b - a for a, b in itertools.pairwise(reads)), default=0.0)
    finally:
        probe.stop()
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    """Start a broker, Redis, the API and the workers; run one flood; print its figures as JSON."""
    from tests.api.server import api_settings, running_api
    from tests.joiner.harness import JoinerProcess

    from streamjoin.dev.stack import EmbeddedStack
    from streamjoin.topics import TopicSpec, create_topics, load_catalog

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-pending", type=int, default=20, help="STREAMJOIN_API_MAX_PENDING_QUERIES")
    parser.add_argument("--baseline-s", type=float, default=15.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedStack(workdir=Path(tmp) / "stack") as stack:
        topics = {s: f"flood.in.{s}" for s in ("a", "b")}
        create_topics(stack.bootstrap, load_catalog())  # the registry's log, the positions, ...
        create_topics(stack.bootstrap, [TopicSpec(t, "input", 2) for t in topics.values()])
        settings = api_settings(stack.redis_url, stack.bootstrap, api_max_queries=args.queries + 10,
                                api_max_pending_queries=args.max_pending)  # fmt: skip
        with running_api(settings) as api:
            _wait(lambda: api.anon.get("/readyz").status_code == 200, 60)  # the registry restored
            for s, t in topics.items():
                body = {"name": s, "topic": t, "timestamp": "ts", "key": "k"}
                if (answer := api.client.post("/v1/streams", json=body)).status_code != 201:
                    raise RuntimeError(f"registering stream {s} failed: {answer.status_code} {answer.text}")
            where = (Path(tmp), stack.bootstrap, stack.redis_url)
            workers = [
                JoinerProcess(*where, group="flood", prefix=api.prefix, name=f"w{i}")
                for i in range(args.workers)
            ]
            for w in workers:
                w.start()
            try:
                figures = flood(api.client, stack.bootstrap, topics, queries=args.queries,
                                baseline_s=args.baseline_s, running_timeout_s=900)  # fmt: skip
            finally:
                for w in workers:
                    w.stop()
            exits = [w.starts - 1 for w in workers]
    print(json.dumps({**asdict(figures), "worker_restarts": exits}, indent=2))


if __name__ == "__main__":
    main()
