"""The soak (issue 17's proof, the long part): 3 workers at twice the design rate for 10 minutes,
every fault of the issue on a schedule, 1% poison records of every kind, the output compared with
the oracle at the end, the lag over time and the cores each process used, minute by minute.

    python -m bench.soak --design-rate 3000              # 10 minutes at 6,000 records/s
    python -m bench.soak --design-rate 3000 --minutes 2 --broker-freeze-s 10
    python -m bench.soak --design-rate 3000 --redis-empty   # also Redis restarted empty (last fault)

The design rate is what one worker is sized for (records/s through the joiner; docs/reliability.md,
"Proof", says how it was measured). The faults start within the first 40% of the run (10 minutes:
from 5 s to 245 s, one about every 22 s); the lag must stay flat over the last 5 minutes (the
backlog grows by less than one second of input). Prints the figures and writes them to
bench/results/soak-<date>.json; exits 1 unless the output equals the oracle's (0 lost, 0 duplicated,
0 extra, the dead letters equal to the injected bad records) and the lag is flat.
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
from typing import Any, get_args

from bench.soak.cluster import BrokerKind
from bench.soak.cpu import CpuSampler, cores_by_minute
from bench.soak.faults import standard_schedule
from bench.soak.lag import lag_trend
from bench.soak.scenario import Progress, Scenario, run_scenario
from rich.console import Console
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bar
from rich.table import Table

RESULTS = Path(__file__).resolve().parent.parent / "results"


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--design-rate", type=float, required=True, help="records/s one worker is sized for")
    parser.add_argument("--factor", type=float, default=2.0, help="total rate = factor x design rate")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--kills", type=int, default=6)
    parser.add_argument("--restarts", type=int, default=2)
    parser.add_argument("--freeze-s", type=float, default=14.0, help="worker freeze (session timeout 6 s)")
    parser.add_argument("--broker-freeze-s", type=float, default=30.0)
    parser.add_argument("--no-redis-restart", action="store_true")
    parser.add_argument("--redis-empty", action="store_true", help="also restart Redis empty (last fault)")
    parser.add_argument("--broker", choices=get_args(BrokerKind), default="kafka",
                        help="Apache Kafka (one node, or 3 with RF 3), or the embedded Tansu")  # fmt: skip
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="default bench/results/soak-<date>.json")
    parser.add_argument("--keep", type=Path, default=None, help="keep the logs in this directory")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the soak; print and write the figures; return the exit code."""
    args = _args(argv)
    # A SIGTERM (`kill`, a CI timeout) unwinds like Ctrl-C, so the runner's `finally` stops the
    # broker, Redis and the workers instead of leaving them running.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    console = Console()
    duration = args.minutes * 60
    rate = args.factor * args.design_rate
    schedule = standard_schedule(
        span_s=max(duration / 2 - 60, duration / 3), workers=args.workers, kills=args.kills,
        restarts=args.restarts,
        freeze_s=args.freeze_s, redis_restart=not args.no_redis_restart, redis_empty=args.redis_empty,
        broker_freeze_s=args.broker_freeze_s, seed=args.seed,
    )  # fmt: skip
    scenario = Scenario(
        "soak", rate=rate, duration_s=duration, schedule=schedule, workers=args.workers, broker=args.broker
    )
    console.print(
        f"soak on {args.broker}: {args.workers} workers, {rate:,.0f} records/s for {args.minutes:g} min;"
        " faults:"
    )
    for fault in schedule:
        console.print(f"  {fault.at_s:6.1f} s  {fault.describe()}")
    loads: list[tuple[float, tuple[float, float, float]]] = [(0.0, os.getloadavg())]
    began = time.time()
    with Bar(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[status]}"),
             TimeElapsedColumn(), console=console) as bar:  # fmt: skip
        task = bar.add_task("producing", total=duration, status="starting")

        def show(p: Progress) -> None:
            if not loads or p.elapsed_s - loads[-1][0] >= 10:
                loads.append((p.elapsed_s, os.getloadavg()))
            lag = "Redis down" if p.lag is None else f"lag {p.lag:,}"
            status = f"{p.produced:,} records, {lag}, load {os.getloadavg()[0]:.1f}"
            bar.update(task, completed=min(p.elapsed_s, duration), description=p.phase,
                       status=status + (f"  [{p.fault}]" if p.fault else ""))  # fmt: skip

        cpu = CpuSampler()
        cpu.start()
        try:
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                report = run_scenario(scenario, args.keep, progress=show)
            else:
                with tempfile.TemporaryDirectory(prefix="streamjoin-soak-") as workdir:
                    report = run_scenario(scenario, Path(workdir), progress=show)
        finally:
            cpu.stop()
    window = min(300.0, duration / 2)
    trend = lag_trend(report.lag, from_s=duration - window, to_s=duration, rate=rate)
    figures: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "wall_s": round(time.time() - began, 1),
        "design_rate_per_worker": args.design_rate,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "load_average": [[round(t), [round(x, 2) for x in la]] for t, la in loads],
        "lag_trend": trend.as_json(),
        "cores_by_minute": cores_by_minute(cpu.samples),
        **report.as_json(),
    }
    _print(console, figures, report.verdict.summary())
    RESULTS.mkdir(exist_ok=True)
    out = args.out or RESULTS / f"soak-{datetime.date.today().isoformat()}.json"
    out.write_text(json.dumps(figures, indent=1) + "\n")
    console.print(f"written: {out}")
    return 0 if report.verdict.ok and trend.flat and not report.not_drained else 1


def _print(console: Console, figures: dict[str, Any], summary: str) -> None:
    faults = Table("at s", "ended s", "fault", "detail", title="faults")
    for f in figures["faults"]:
        detail = {k: v for k, v in f.items() if k not in ("at_s", "ended_s", "fault")}
        faults.add_row(str(f["at_s"]), str(f["ended_s"]), f["fault"], json.dumps(detail) if detail else "")
    console.print(faults)
    lag = Table("minute", "mean lag", "max lag", "mean behind re-keying", "mean behind operators",
                title="lag (records produced, not yet committed)")  # fmt: skip
    samples = [(t, n) for t, n in figures["lag"] if n is not None]
    for minute in range(int(figures["duration_s"] // 60) + 1):
        inside = [n for t, n in samples if minute * 60 <= t < (minute + 1) * 60]
        parts = [(a, b) for t, a, b in figures["lag_parts"] if minute * 60 <= t < (minute + 1) * 60]
        if inside:
            split = [f"{sum(p[i] for p in parts) / len(parts):,.0f}" if parts else "" for i in (0, 1)]
            lag.add_row(str(minute), f"{sum(inside) / len(inside):,.0f}", f"{max(inside):,}", *split)
    console.print(lag)
    trend = figures["lag_trend"]
    flat = "flat" if trend["flat"] else "NOT flat"
    console.print(f"lag from {trend['from_s']} s to {trend['to_s']} s: mean {trend['mean']:,}, "
                  f"max {trend['max']:,}, slope {trend['slope_records_per_s']}/s: {flat}")  # fmt: skip
    names = list(figures["cores_by_minute"])
    cores = Table("minute", *names, title="cores used (from the start)")
    for minute, row in enumerate(zip(*figures["cores_by_minute"].values(), strict=True)):
        cores.add_row(str(minute), *("" if c is None else f"{c:.2f}" for c in row))
    console.print(cores)
    console.print(f"load average (1/5/15 min) at start, end: {figures['load_average'][0][1]}, "
                  f"{figures['load_average'][-1][1]} on {figures['cpus']} cores")  # fmt: skip
    if figures["not_drained"]:
        console.print(f"NOT DRAINED (committed, produced): {figures['not_drained']}")
    console.print(summary)
    lost = figures["lost"]
    if lost.get("count"):
        console.print(f"lost results due from {lost['first_s']} s to {lost['last_s']} s of the run;"
                      f" by operator partition {lost['by_operator']}; by input component"
                      f" {lost['by_component']}; by 10 s {lost['by_10_s']}")  # fmt: skip
        for example in lost["examples"][:3]:
            console.print(f"  lost: {example}")
    for letter in figures["verdict"]["dead_letters"]["examples"]:
        console.print(f"  dead letter: {letter}")


if __name__ == "__main__":
    sys.exit(main())
