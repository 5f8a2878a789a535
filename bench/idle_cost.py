"""What idle queries cost a worker: its CPU (and the broker's) while it holds N running queries that
receive nothing (docs/joiner.md, "What a query costs a worker").

    python bench/idle_cost.py --queries 0 10 30   # prints one JSON line per count

One worker, the embedded broker and Redis; the queries are the flood's (`bench.flood.FLOOD_CQL`):
each re-keys both inputs of 2 partitions, so it runs 2 operators and 4 repartitioners. The counts
are reached one after another (registering the difference); after each, once every query runs and
`--settle-s` passed, the worker's CPU (user + system, /proc) is read over `--measure-s`.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
from bench.flood import FLOOD_CQL, _statuses, _wait

__all__ = ["cpu_seconds", "main"]


def cpu_seconds(pid: int) -> float:
    """Return the user + system CPU seconds process `pid` used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cores(pid: int, seconds: float) -> float:
    start, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - start) / (time.monotonic() - t0)


def _running(client: httpx.Client) -> set[str]:
    return {name for name, status in _statuses(client).items() if status == "running"}


def main(argv: Sequence[str] | None = None) -> None:
    """Start a broker, Redis, the API and one worker; print the worker's CPU at each query count."""
    from tests.api.server import api_settings, running_api
    from tests.joiner.harness import JoinerProcess

    from streamjoin.dev.stack import EmbeddedStack
    from streamjoin.topics import TopicSpec, create_topics, load_catalog

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--queries", type=int, nargs="+", default=[0, 10, 30])
    parser.add_argument("--settle-s", type=float, default=15.0)
    parser.add_argument("--measure-s", type=float, default=20.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedStack(workdir=Path(tmp) / "stack") as stack:
        topics = {s: f"idle.in.{s}" for s in ("a", "b")}
        create_topics(stack.bootstrap, load_catalog())
        create_topics(stack.bootstrap, [TopicSpec(t, "input", 2) for t in topics.values()])
        settings = api_settings(stack.redis_url, stack.bootstrap, api_max_queries=max(args.queries) + 10)
        with running_api(settings) as api:
            _wait(lambda: api.anon.get("/readyz").status_code == 200, 60)
            for s, t in topics.items():
                body = {"name": s, "topic": t, "timestamp": "ts", "key": "k"}
                if (answer := api.client.post("/v1/streams", json=body)).status_code != 201:
                    raise RuntimeError(f"registering stream {s} failed: {answer.status_code} {answer.text}")
            where = (Path(tmp), stack.bootstrap, stack.redis_url)
            worker = JoinerProcess(*where, group="idle", prefix=api.prefix)
            worker.start()
            try:
                assert worker.process is not None and worker.process.pid is not None
                print(json.dumps({"worker_pid": worker.process.pid}), flush=True)  # to profile it
                time.sleep(args.settle_s)
                registered = 0
                for count in sorted(args.queries):
                    for i in range(registered, count):
                        body = {"name": f"idle-{i}", "cql": FLOOD_CQL, "output": {"topic": f"idle.out.{i}"}}
                        while (answer := api.client.post("/v1/queries", json=body)).status_code == 429:
                            time.sleep(float(answer.headers.get("Retry-After", "1")))
                    registered = max(registered, count)
                    names = {f"idle-{i}" for i in range(registered)}
                    running = _wait(lambda: _running(api.client) >= names, 600)  # noqa: B023
                    time.sleep(args.settle_s)
                    cores = _cores(worker.process.pid, args.measure_s)
                    line = {"queries": count, "running": running, "worker_cores": round(cores, 3),
                            "load": os.getloadavg()[0]}  # fmt: skip
                    print(json.dumps(line), flush=True)
            finally:
                worker.stop()


if __name__ == "__main__":
    main()
