"""The joiner as one system of the Kafka mode: start workers, register the workload's query over
the input topics already on the broker, run until SIGTERM, stop the workers.

    python -m bench.peers.joiner_kafka DIRECTORY --bootstrap B --redis-url R --topics JSON
        --output TOPIC [--workers 1] [--worker-arg=--idle-timeout-ms=5 ...] [--py-spy PATH]

`--topics` is {"stream": ["topic", "key field"], ...}: each input is declared keyed by its topic's
key field, so a query whose inputs share one (equi3, golab5, zipf3) reads them directly and chain4
(no field shared by all inputs) runs on one partition, its inputs re-keyed into it
(docs/partitioning.md). The query starts at `earliest`. The bench measures this process and the
workers under it, and Redis apart. When stopped it prints, before stopping the workers, the
operators' late records per input partition as last published (`"late": {partition: n}`, written
every second): a result count short of the reference with late records points at the watermark.
`--py-spy PATH` records worker 0 with py-spy for its whole life (250 samples a second, every
thread, idle samples left out; a speedscope profile for a `.json` PATH, collapsed stacks
otherwise). py-spy runs under this process, so a profiled run's CPU counts it: profile, do not
measure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from bench.joiner_throughput_harness import record_profile, register

from streamjoin.dev.process import ManagedProcess
from streamjoin.registry import RegistryStore

__all__ = ["main", "query"]


def query(directory: Path, topics: dict[str, list[str]], output: str, name: str) -> dict[str, Any]:
    """Return the workload's query over `topics`, each input keyed by its topic's key field."""
    q: dict[str, Any] = json.loads((directory / "query.json").read_text())
    for i in q["inputs"]:
        i["topic"], i["key"] = topics[i["stream"]]
    q["output"]["topic"] = output
    q["name"] = name
    q["start"] = "earliest"
    return q


async def late_by_partition(redis_url: str, prefix: str, name: str) -> dict[int, int]:
    """Return the late records of query `name` per input partition, as its operators last published."""
    async with RegistryStore(redis_url, prefix=prefix) as reg:
        return {s.partition: s.operator.late or 0 for s in await reg.read_stats(name)}


def _worker(
    bootstrap: str, redis_url: str, prefix: str, group: str, i: int, logs: Path, extra: list[str]
) -> ManagedProcess:
    argv = [sys.executable, "-c", "from streamjoin.cli.main import main; main()", "joiner",
            "--bootstrap", bootstrap, "--redis-url", redis_url, "--prefix", prefix, "--group", group,
            "--worker-id", f"{group}-{i}", "--log-level", "WARNING", *extra]  # fmt: skip
    proc = ManagedProcess(f"joiner-{i}", argv, log_path=logs / f"{group}-{i}.log")
    proc.start()
    return proc


def main() -> None:
    """Run the joiner on the workload until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--topics", required=True, type=json.loads)
    parser.add_argument("--output", required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--worker-arg", action="append", default=[], help="an option added to every worker's command"
    )
    parser.add_argument("--py-spy", type=Path, default=None, metavar="PATH", help="profile worker 0")
    args = parser.parse_args()
    u = uuid.uuid4().hex[:6]
    prefix, group, name = f"peers{u}:", f"peers-{u}", f"peers{u}"
    logs = Path(tempfile.mkdtemp(prefix="peers-joiner-"))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    procs = [
        _worker(args.bootstrap, args.redis_url, prefix, group, i, logs, args.worker_arg)
        for i in range(args.workers)
    ]
    spy = record_profile(procs[0].pid, args.py_spy) if args.py_spy and procs[0].pid else None
    try:
        asyncio.run(register(args.redis_url, prefix, query(args.directory, args.topics, args.output, name)))
        print(json.dumps({"query": name, "prefix": prefix, "logs": str(logs)}), flush=True)
        while not stop.wait(0.5):
            if any(not p.running for p in procs):
                raise SystemExit(f"a joiner worker exited; logs in {logs}")
        print(json.dumps({"late": asyncio.run(late_by_partition(args.redis_url, prefix, name))}), flush=True)
    finally:
        for p in procs:
            p.stop(timeout_ms=10_000)
        if spy is not None:
            spy.wait(timeout=60)  # writes the profile once worker 0 has exited


if __name__ == "__main__":
    main()
