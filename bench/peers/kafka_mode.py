"""The peer benchmark's Kafka mode: every system reads the same input topics on one Apache Kafka
broker and writes every result to its own output topic (`python -m bench.peers kafka --help`).

    python -m bench.peers kafka                               # full scale, 2 rounds, then latency
    python -m bench.peers kafka --scale 0.05 --rounds 1 --latency-s 10
    python -m bench.peers kafka --workloads equi3 --systems joiner kstreams --skip-latency
    python -m bench.peers kafka --rounds 0 --latency-rate 460 --workloads equi3   # latency only
    python -m bench.peers kafka --workloads zipf3 --systems joiner --joiner-arg=--idle-timeout-ms=1

One embedded stack (Apache Kafka 4.1 and Redis) for the whole run. Each workload's events are
produced once to its input topics (4 partitions, `kafka_inputs.py`); then, in rounds with the
system order rotating, each system runs on them from the start (`kafka_run.py`) and must write
exactly the reference count (the engine's, or for `kstreams-chained` its own semantics'); then each
system's latency at one input rate for all (`kafka_latency.py`). Writes
bench/results/peers-kafka-<date>[-scale<s>].json and prints the table (`kafka_report.py`).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.peers.chained_count import chained_count
from bench.peers.engine_count import count
from bench.peers.kafka_inputs import KafkaInputs, create, create_output, produce_workload
from bench.peers.kafka_latency import latency_run
from bench.peers.kafka_report import markdown, rates_for_latency, summarise
from bench.peers.kafka_run import Services, drop_topics, run_system
from bench.peers.kafka_systems import KAFKA_SYSTEMS, Joiner, KafkaSystem, Setting
from bench.peers.kstreams_app import Semantics
from bench.peers.venv import PACKAGES, ensure_venv
from bench.peers.workloads import Workload, common_arguments, names, scaled, write_workload

from streamjoin.dev.stack import EmbeddedStack
from streamjoin.topics import create_topics, load_catalog

__all__ = ["main"]

_ROOT = Path(__file__).resolve().parent.parent.parent
_DEFAULT_SYSTEMS = [s for s in KAFKA_SYSTEMS if s != "kstreams-chained"]


class CountMismatch(SystemExit):
    """A system's result count differs from its reference."""


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers kafka",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common_arguments(parser, rounds=2)
    parser.add_argument("--systems", nargs="*", default=_DEFAULT_SYSTEMS, choices=list(KAFKA_SYSTEMS))
    parser.add_argument(
        "--stall-s", type=float, default=90.0, help="give up when an output is still this long"
    )
    parser.add_argument(
        "--latency-rate",
        type=int,
        default=0,
        help="input records/s of the latency runs (0: half the slowest system's best, per workload)",
    )
    parser.add_argument("--latency-s", type=float, default=30.0, help="seconds of input per latency run")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument(
        "--joiner-arg",
        action="append",
        default=[],
        help="an option added to every joiner worker's command (e.g. --joiner-arg=--idle-timeout-ms=1)",
    )
    parser.add_argument(
        "--joiner-py-spy",
        type=Path,
        default=None,
        metavar="DIR",
        help="record each joiner run's worker 0 with py-spy into DIR/<output topic>.txt (its CPU "
        "then counts py-spy: a profile, not a measurement)",
    )
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.rounds < 0 or args.latency_s <= 0:
        parser.error("--scale and --latency-s must be > 0 and --rounds >= 0")
    if args.rounds == 0 and not args.latency_rate:
        parser.error("--rounds 0 (latency only) needs --latency-rate")
    return args


def mismatch(system: KafkaSystem, workload: str, expect: int, got: int, log: str) -> str | None:
    """Return why `got` is not `expect`, or None when the count is right."""
    if got != expect:
        return (
            f"{system.name} wrote {got:,} results on {workload}, its reference is {expect:,} "
            f"({system.semantics} semantics); its log: {log}"
        )
    return None


def _reference(semantics: Semantics, directory: Path, limit: int | None = None) -> int:
    """Return the expected count of `semantics` over the workload's first `limit` events (the
    whole workload's is kept beside its files: the data are fixed, the count takes minutes)."""
    cached = directory / f"reference-{semantics}.json"
    if limit is None and cached.exists():
        return int(json.loads(cached.read_text())["results"])
    if semantics == "pairwise":
        results = count(directory / "query.json", directory / "events.jsonl", limit=limit)
    else:
        results = chained_count(directory, limit=limit)
    if limit is None:
        cached.write_text(json.dumps({"results": results}) + "\n")
    return results


class KafkaBench:
    """One run of the Kafka mode: the stack, the workloads' topics, and what was measured so far."""

    def __init__(self, args: argparse.Namespace, stack: EmbeddedStack, workdir: Path) -> None:
        """Describe the run; `produce_inputs` puts the workloads on the broker."""
        self.args = args
        self.stack = stack
        self.workdir = workdir
        self.workloads: list[Workload] = names(args.workloads)
        self.systems = [_configured(KAFKA_SYSTEMS[s], args) for s in dict.fromkeys(args.systems)]
        self.data: dict[str, Path] = {}
        self.inputs: dict[str, KafkaInputs] = {}
        self.reference: dict[str, dict[str, int]] = {}
        self.peers_python = Path(sys.executable)
        self.services = Services(*(s.process.pid if s.process else None for s in stack.services))
        self.run_id = uuid.uuid4().hex[:6]
        self.started = datetime.datetime.now(datetime.UTC)
        self.runs: list[dict[str, Any]] = []
        self.latencies: list[dict[str, Any]] = []
        self.mismatches: list[str] = []
        self.loads: list[list[float]] = [list(os.getloadavg())]
        suffix = ("" if args.scale == 1 else f"-scale{args.scale:g}") + (
            "-latency" if args.rounds == 0 else ""
        )
        self.path = args.results / f"peers-kafka-{self.started:%Y-%m-%d}{suffix}.json"

    def prepare(self) -> None:
        """Write the workload files, install and build what the systems need, count the references."""
        for w in self.workloads:
            records = scaled(w, self.args.scale)
            self.data[w.name] = write_workload(w, records, self.args.data / f"{w.name}-{records}")
        if any(s.jvm for s in self.systems):
            if shutil.which("java") is None:
                raise SystemExit("Kafka Streams, Flink and Spark need Java 17 on PATH (`java`)")
            self.peers_python = ensure_venv(self.args.peers_venv)
        for system in self.systems:
            system.prepare()
        print("reference counts ...", file=sys.stderr, flush=True)
        kinds = sorted({s.semantics for s in self.systems})
        self.reference = {n: {k: _reference(k, d) for k in kinds} for n, d in self.data.items()}

    def produce_inputs(self) -> None:
        """Produce every workload once to its input topics."""
        for w in self.workloads:
            self.inputs[w.name] = create(self.stack.bootstrap, self.data[w.name], f"{w.name}.{self.run_id}")
            produce_workload(self.stack.bootstrap, self.inputs[w.name], self.data[w.name])

    def setting(self, w: Workload, output: str) -> Setting:
        """Return where a system runs workload `w`, writing to `output`."""
        return Setting(
            self.data[w.name],
            self.inputs[w.name],
            output,
            self.stack.bootstrap,
            self.stack.redis_url,
            self.peers_python,
            self.workdir,
        )

    def throughput(self, round_: int) -> None:
        """Run every system on every workload once, the order rotated by `round_`."""
        order = _rotated(self.systems, round_)
        for w in self.workloads:
            for system in order:
                output = f"peers.out.{w.name}.{system.name}.{round_}.{self.run_id}"
                create_output(self.stack.bootstrap, [output])
                expect = self.reference[w.name][system.semantics]
                one = run_system(system, self.setting(w, output), self.services, expect, self.args.stall_s)
                self.loads.append(list(os.getloadavg()))
                drop_topics(self.stack.bootstrap, output)
                self.note(mismatch(system, w.name, expect, one["results"], one["log"]))
                records = scaled(w, self.args.scale)
                self.runs.append(
                    {"workload": w.name, "records": records, "system": system.name, "round": round_, **one}
                )
                self.write_report()
                print(
                    f"round {round_ + 1} {w.name:<7} {system.name:<16} {one['results']:>10,} results "
                    f"{one['cpu_s']:7.1f} CPU s (broker {one['broker_cpu_s']:5.1f}) "
                    f"{one['wall_s']:7.1f} wall s {one['peak_rss_kb'] / 1024:6.0f} MiB",
                    file=sys.stderr,
                    flush=True,
                )

    def latency(self) -> None:
        """Run every system at each workload's latency rate once."""
        rates = rates_for_latency(self.runs, self.args.latency_rate, [w.name for w in self.workloads])
        for i, w in enumerate(self.workloads):
            for system in _rotated(self.systems, i):
                tag = f"{w.name}.{system.name}.{self.run_id}"
                directory, kind = self.data[w.name], system.semantics
                one = latency_run(
                    system,
                    self.setting(w, f"peers.lat.out.{tag}"),
                    rates[w.name],
                    self.args.latency_s,
                    tag,
                    lambda n, k=kind, d=directory: _reference(k, d, n),
                )
                self.loads.append(list(os.getloadavg()))
                drop_topics(self.stack.bootstrap, f"peers.lat.out.{tag}")
                self.note(mismatch(system, w.name, one["expect"], one["results"], one["log"]))
                self.latencies.append({"workload": w.name, "system": system.name, **one})
                self.write_report()
                print(
                    f"latency {w.name:<7} {system.name:<16} {one['rate']:>7,}/s "
                    f"p50 {one['p50_ms']:8.1f} ms p99 {one['p99_ms']:8.1f} ms",
                    file=sys.stderr,
                    flush=True,
                )

    def note(self, problem: str | None) -> None:
        """Keep a count mismatch for the end (the run goes on, so its other figures are not lost)."""
        if problem is not None:
            self.mismatches.append(problem)
            print(f"COUNT MISMATCH: {problem}", file=sys.stderr, flush=True)

    def write_report(self) -> list[dict[str, Any]]:
        """Write what was measured so far (after every run: a stopped benchmark keeps its figures)."""
        rows = summarise(self.runs, self.latencies)
        report = {
            "started": self.started.isoformat(timespec="seconds"),
            "mode": "kafka",
            "command": "python -m bench.peers kafka " + " ".join(sys.argv[2:]),
            "scale": self.args.scale,
            "rounds": self.args.rounds,
            "machine": {
                "cpus": os.cpu_count(),
                "load": self.loads,
                "python": platform.python_version(),
                "peers": list(PACKAGES),
                "broker": "Apache Kafka 4.1.1 (KRaft, 1 node)",
            },
            "workloads": {
                w.name: {"title": w.title, "records": scaled(w, self.args.scale)} for w in self.workloads
            },
            "reference": self.reference,
            "count_mismatches": self.mismatches,
            "summary": rows,
            "runs": self.runs,
            "latency": self.latencies,
        }
        self.args.results.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(report, indent=1) + "\n")
        return rows


def _configured(system: KafkaSystem, args: argparse.Namespace) -> KafkaSystem:
    """Return `system` with the joiner's options of the command line (other systems as they are)."""
    if not isinstance(system, Joiner):
        return system
    profile_dir = args.joiner_py_spy.resolve() if args.joiner_py_spy is not None else None
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    return dataclasses.replace(system, worker_args=tuple(args.joiner_arg), profile_dir=profile_dir)


def _rotated(systems: list[KafkaSystem], shift: int) -> list[KafkaSystem]:
    shift %= len(systems)
    return systems[shift:] + systems[:shift]


def main(argv: list[str] | None = None) -> None:
    """Run the Kafka mode."""
    args = _args(argv)
    # A SIGTERM unwinds like Ctrl-C, so every system started and the stack are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    logs = Path(tempfile.mkdtemp(prefix="peers-kafka-logs-"))  # kept: the systems' logs
    print(f"logs: {logs}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="peers-kafka-") as tmp:
        with EmbeddedStack(workdir=Path(tmp) / "stack") as stack:
            if stack.broker_kind != "kafka":
                raise SystemExit("the Kafka mode needs Apache Kafka (Java 17 and Maven, or its cached jars)")
            # The joiner's own topics (positions, re-key markers): the broker creates no topic itself.
            create_topics(stack.bootstrap, load_catalog())
            bench = KafkaBench(args, stack, logs)
            bench.prepare()
            bench.produce_inputs()
            for round_ in range(args.rounds):
                bench.throughput(round_)
            if not args.skip_latency:
                bench.latency()
        rows = bench.write_report()
    print(markdown(rows, {s.name: s.label for s in bench.systems}))
    path = bench.path
    print(f"written: {path.relative_to(_ROOT) if path.is_relative_to(_ROOT) else path}", file=sys.stderr)
    if bench.mismatches:
        raise CountMismatch("result counts disagree:\n" + "\n".join(bench.mismatches))
