"""Peer benchmark: streamjoin against Flink SQL and Spark Structured Streaming on the same files.

Generates the workloads (deterministic seeds) into `--data`, installs PyFlink 2.2 and PySpark 4.2
into `--peers-venv` if missing, then runs every system on every workload in rounds, the system
order rotating each round, checks that all result counts agree (a mismatch fails the run), and
writes bench/results/peers-<date>[-scale<s>].json and prints the markdown table.

    python -m bench.peers                       # full scale, 3 rounds (about an hour)
    python -m bench.peers --scale 0.1 --rounds 2
    python -m bench.peers --workloads equi3 golab5 --systems replay engine flink
    python -m bench.peers --systems replay engine joiner   # no JVM: streamjoin alone

Figures: wall seconds of the whole process (start-up included), CPU seconds of it and of the
children it waited for (the peers' JVMs included), peak RSS (the sum of the job's processes). The
joiner reports its own: from the query running to its last result, worker + broker + Redis CPU.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.peers.engine_count import count
from bench.peers.measure import run
from bench.peers.report import Run, markdown, summarise
from bench.peers.systems import SYSTEMS, System
from bench.peers.venv import PACKAGES, ensure_venv
from bench.peers.workloads import Workload, common_arguments, names, scaled, write_workload

__all__ = ["main"]

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent.parent


class CountMismatch(SystemExit):
    """Two systems disagree on a workload's result count."""


def measure_once(
    system: System,
    workload: Workload,
    data: Path,
    peers_python: Path,
    workdir: Path,
    round_: int,
    expect: int,
) -> Run:
    """Run `system` on `data` once (`expect`: the reference count); return the measured run."""
    out, err = workdir / f"{workload.name}.{system.name}.out", workdir / f"{workload.name}.{system.name}.err"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT / "services"), str(_ROOT)])}
    measured = run(system.argv(data, peers_python, expect), stdout=out, stderr=err, env=env)
    if measured.returncode != 0:
        tail = "\n".join(err.read_text(errors="replace").splitlines()[-15:])
        raise SystemExit(f"{system.name} failed on {workload.name} (exit {measured.returncode}):\n{tail}")
    count = system.count(out)
    out.unlink()
    return Run(
        workload=workload.name,
        records=scaled_records(data),
        system=system.name,
        round=round_,
        results=count.results,
        wall_s=round(measured.wall_s if count.wall_s is None else count.wall_s, 3),
        cpu_s=round(measured.cpu_s if count.cpu_s is None else count.cpu_s, 3),
        peak_rss_kb=max(measured.peak_rss_kb, count.peak_rss_kb),
    )


def scaled_records(data: Path) -> int:
    """Return the record count written into `data`."""
    return int(json.loads((data / "workload.json").read_text())["records"])


def check_count(reference: int, new: Run) -> None:
    """Fail the benchmark if `new` disagrees with the reference count (the engine's, in-process)."""
    if new.results != reference:
        raise CountMismatch(
            f"result counts disagree on {new.workload} ({new.records:,} records): "
            f"streamjoin engine (reference) {reference:,}, {new.system} {new.results:,}"
        )


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common_arguments(parser, rounds=3)
    parser.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--generate-only", action="store_true", help="write the workload files and stop")
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.rounds < 1:
        parser.error("--scale must be > 0 and --rounds >= 1")
    return args


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (`kafka` first: the Kafka mode, bench/peers/kafka_mode.py)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["kafka"]:
        from bench.peers.kafka_mode import main as kafka_main

        kafka_main(argv[1:])
        return
    args = _args(argv)
    workloads = names(args.workloads)
    systems = [SYSTEMS[s] for s in args.systems]
    data = {
        w.name: write_workload(w, scaled(w, args.scale), args.data / f"{w.name}-{scaled(w, args.scale)}")
        for w in workloads
    }
    if args.generate_only:
        print("\n".join(str(d) for d in data.values()))
        return
    peers_python = Path(sys.executable)
    if any(s.name in ("flink", "spark") for s in systems):
        if shutil.which("java") is None:
            raise SystemExit("Flink and Spark need Java 17 on PATH (`java`); or pass --systems replay engine")
        peers_python = ensure_venv(args.peers_venv)
    print("reference counts (streamjoin engine, in-process) ...", file=sys.stderr, flush=True)
    reference = {name: count(d / "query.json", d / "events.jsonl") for name, d in data.items()}
    runs: list[Run] = []
    started = datetime.datetime.now(datetime.UTC)
    load_before = os.getloadavg()
    args.results.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.scale == 1 else f"-scale{args.scale:g}"
    path = args.results / f"peers-{started:%Y-%m-%d}{suffix}.json"

    def write_report() -> list[dict[str, Any]]:
        """Write what was measured so far (after every run: a stopped benchmark keeps its figures)."""
        rows = summarise(runs)
        report: dict[str, Any] = {
            "started": started.isoformat(timespec="seconds"),
            "scale": args.scale,
            "rounds": args.rounds,
            "complete": len(runs) == args.rounds * len(workloads) * len(systems),
            "machine": {
                "cpus": os.cpu_count(),
                "load_before": load_before,
                "load_after": os.getloadavg(),
                "python": platform.python_version(),
                "peers": list(PACKAGES),
            },
            "workloads": {w.name: {"title": w.title, "records": scaled(w, args.scale)} for w in workloads},
            "summary": rows,
            "runs": [vars(r) for r in runs],
        }
        path.write_text(json.dumps(report, indent=1) + "\n")
        return rows

    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        for round_ in range(args.rounds):
            order = systems[round_ % len(systems) :] + systems[: round_ % len(systems)]
            for w in workloads:
                for system in order:
                    expect = reference[w.name]
                    one = measure_once(system, w, data[w.name], peers_python, Path(tmp), round_, expect)
                    check_count(expect, one)
                    runs.append(one)
                    write_report()
                    print(
                        f"round {round_ + 1} {w.name:<7} {system.name:<7} {one.results:>10,} results "
                        f"{one.cpu_s:8.1f} CPU s {one.wall_s:8.1f} wall s {one.peak_rss_kb / 1024:7.0f} MiB",
                        file=sys.stderr,
                        flush=True,
                    )
    rows = write_report()
    print(markdown(rows, {s.name: s.label for s in SYSTEMS.values()}))
    print(f"written: {path.relative_to(_ROOT) if path.is_relative_to(_ROOT) else path}", file=sys.stderr)


if __name__ == "__main__":
    main()
