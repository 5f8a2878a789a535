"""Broker crashes on Apache Kafka at a larger scale than CI's: the soak's workload through 3 workers
while a broker is SIGKILLed mid-run and started again on its data, the output compared with the
oracle, and how long results paused (docs/reliability.md, "Broker crashes").

    python -m bench.soak.broker_crash                          # both runs below, 3,000 records/s
    python -m bench.soak.broker_crash --broker kafka           # the only node, restarted 3 s later
    python -m bench.soak.broker_crash --broker kafka-cluster   # the leading node of 3, 30 s later
    python -m bench.soak.broker_crash --idle-timeout-ms 20000  # an outage longer than the idle timeout

Each run produces for `--seconds` (default 120) and crashes the broker `--kill-at` seconds in
(default 30). Prints, per run: results expected, published, duplicated and lost; input records
counted late; the broker's restart; the longest pause in results around the crash (all output
partitions, and one partition alone) against the longest in the 10 s before it; how long until the
lag was back at its level before the crash; the workers that exited on their own (75: no
assignment for three session timeouts) and were started again. Writes everything to
bench/results/broker-crash-<date>.json; exits 1 unless every run was exactly once.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.soak.cluster import BrokerKind
from bench.soak.faults import BrokerCrash
from bench.soak.scenario import Report, Scenario, run_scenario

RESULTS = Path(__file__).resolve().parent.parent / "results"
DOWN_S: dict[BrokerKind, float] = {"kafka": 3.0, "kafka-cluster": 30.0}
"""How long the killed node stays down before it is started again: the only node comes back at
once (the outage is its restart); a cluster's goes on without it for a while."""


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak.broker_crash", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--broker", choices=["kafka", "kafka-cluster", "both"], default="both")
    parser.add_argument("--rate", type=float, default=3_000.0, help="records/s over the three inputs")
    parser.add_argument("--seconds", type=float, default=120.0, help="how long the producer runs")
    parser.add_argument("--kill-at", type=float, default=30.0, help="seconds into production")
    parser.add_argument("--down-s", type=float, default=None, help="default: 3 (one node), 30 (cluster)")
    parser.add_argument(
        "--idle-timeout-ms",
        type=int,
        default=None,
        help="the workers' (default: the harness's, 60 s; an outage makes no partition idle)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="default bench/results/broker-crash-<date>.json"
    )
    parser.add_argument("--keep", type=Path, default=None, help="keep the logs and data in this directory")
    return parser.parse_args(argv)


def run(broker: BrokerKind, args: argparse.Namespace) -> dict[str, Any]:
    """Run one broker crash; return its figures."""
    down = DOWN_S[broker] if args.down_s is None else args.down_s
    scenario = Scenario(f"broker-crash-{broker}", rate=args.rate, duration_s=args.seconds,
                        schedule=(BrokerCrash(args.kill_at, down_s=down),), broker=broker,
                        idle_timeout_ms=args.idle_timeout_ms)  # fmt: skip
    began, load = time.time(), os.getloadavg()
    if args.keep is not None:
        report = run_scenario(scenario, args.keep / broker)
    else:
        with tempfile.TemporaryDirectory(prefix="streamjoin-broker-crash-") as workdir:
            report = run_scenario(scenario, Path(workdir))
    return {
        "broker": broker,
        "wall_s": round(time.time() - began, 1),
        "load_average": [[round(x, 2) for x in load], [round(x, 2) for x in os.getloadavg()]],
        "idle_timeout_ms": args.idle_timeout_ms,
        "summary": summary(report),
        **report.as_json(),
    }


def summary(report: Report) -> dict[str, Any]:
    """Return the figures the docs quote: the comparison, the crash, the pause and the recovery."""
    v = report.verdict
    (crash,) = report.faults
    (pause,) = report.pauses
    return {
        "exactly_once": v.ok and not report.not_drained,
        "results_expected": v.expected,
        "results_published": v.received,
        "duplicated": v.duplicated,
        "lost": v.lost,
        "extra": v.extra,
        "late_records": report.late,
        "killed_node": crash["broker"],
        "group_coordinator": crash["group_coordinator"],
        "led_partitions": sum(len(ps) for ps in crash["led_partitions"].values()),
        "down_s": crash["down_s"],
        "restart_s": crash["restart_s"],
        "pause_s": pause["longest_s"],
        "pause_from_s": pause["from_s"],
        "pause_to_s": pause["to_s"],
        "pause_one_partition_s": pause["longest_partition_s"],
        "pause_before_s": pause["before_s"],
        "recovered_s": pause["recovered_s"],
        "worker_exits": [f"{r['worker']} exit {r['exit_code']} at {r['at']} s" for r in report.restarts],
        "drain_s": round(report.drain_s, 1),
    }


def _print(figures: dict[str, Any]) -> None:
    s = figures["summary"]
    load = figures["load_average"]
    verdict = "EXACTLY ONCE" if s["exactly_once"] else "NOT EXACTLY ONCE"
    lines = [
        f"== {figures['broker']}: {figures['rate']:,.0f} records/s for {figures['duration_s']:g} s"
        f" (load average {load[0][0]} -> {load[1][0]})",
        f"results: {s['results_expected']:,} expected, {s['results_published']:,} published,"
        f" {s['duplicated']} duplicated, {s['lost']} lost, {s['extra']} extra;"
        f" {s['late_records']} input records late: {verdict}",
        f"crash: node {s['killed_node']} (leading {s['led_partitions']} input and output partitions,"
        f" group coordinator: {s['group_coordinator']}) killed at {figures['faults'][0]['at_s']} s,"
        f" down {s['down_s']} s, {s['restart_s']} s of it starting again",
        f"results paused {s['pause_s']} s (from {s['pause_from_s']} s to {s['pause_to_s']} s);"
        f" one output partition {s['pause_one_partition_s']} s; the 10 s before: {s['pause_before_s']} s",
        f"lag back at its level {s['recovered_s']} s after the kill; drained {s['drain_s']} s after"
        f" production; workers that exited on their own: {s['worker_exits'] or 'none'}",
    ]
    print("\n" + "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    """Run the broker crashes; print and write the figures; return the exit code."""
    args = _args(argv)
    # A SIGTERM unwinds like Ctrl-C, so the runner stops the brokers, Redis and the workers.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    brokers: list[BrokerKind] = ["kafka", "kafka-cluster"] if args.broker == "both" else [args.broker]
    runs = []
    for broker in brokers:
        figures = run(broker, args)
        _print(figures)
        runs.append(figures)
    out = args.out or RESULTS / f"broker-crash-{datetime.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out.write_text(json.dumps({"date": date, "cpus": os.cpu_count(), "runs": runs}, indent=1) + "\n")
    print(f"written: {out}")
    return 0 if all(r["summary"]["exactly_once"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
