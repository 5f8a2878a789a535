"""Fluctuating rates: a stream turns 50x faster halfway; `auto` re-planning vs the best static order.

Four streams, Golab's generator per phase (stream i with probability lambda_i / sum, values uniform
in 1..v_i, evenly spaced timestamps); in the second half S3 arrives 50 times faster. Three runs on
the same records, eager evaluation and expiration, windows filled first (untimed):

- static: the order the planner chooses from the true rates at the start, kept throughout;
- auto: the same start, then a `StatsCollector` (decayed rates, sliding HyperLogLog, defaults)
  feeds a `Replanner` (defaults: threshold 2x, min gain 5%) after every chunk of records and the
  engine switches plans between chunks; the collector's and the planner's time is included;
- hindsight: the best static order for the second half's rates, for reference.

Prints records/s (CPU time of this process; each configuration runs 3 times and the fastest time of
each half counts) per half and overall, and checks that every run produced the same results count.

    python bench/planner_fluctuating.py               # about 30 s of CPU
    python bench/planner_fluctuating.py --records 0.3
"""

from __future__ import annotations

import argparse
import copy
import logging
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golab_workload import GolabStream, golab_query
from streamjoin.engine import JoinPlan, MultiJoin, tune_gc
from streamjoin.planner import CostModel, Planner, Replanner, StreamStats
from streamjoin.planner.collector import StatsCollector
from streamjoin.query import QueryDef
from streamjoin.query.grammar import Algorithm

__all__ = ["BEFORE", "FAST", "Run", "arrivals", "main", "run"]

# (lambda, T, v) chosen (by the model) so that the order matters and results stay few per record:
# S3, a slow stream ordered first, turns 50x faster and then belongs last.
BEFORE = (
    GolabStream("S1", 2, 10, 50),
    GolabStream("S2", 2, 20, 10),
    GolabStream("S3", 0.5, 20, 50),
    GolabStream("S4", 10, 10, 50),
)
FAST, FACTOR = "S3", 50.0
CHUNK = 256
ALGORITHM: Algorithm = "nlj"

Arrival = tuple[str, float, dict[str, Any]]


def _after() -> tuple[GolabStream, ...]:
    return tuple(
        GolabStream(s.name, s.rate * FACTOR, s.window, s.distinct) if s.name == FAST else s for s in BEFORE
    )


def _phase(
    streams: Sequence[GolabStream], start: float, duration: float, rng: random.Random
) -> list[Arrival]:
    total = sum(s.rate for s in streams)
    weights = [s.rate for s in streams]
    out = []
    for idx in range(int(duration * total)):
        stream = streams[rng.choices(range(len(streams)), weights=weights)[0]]
        ts = start + idx / total
        out.append((stream.name, ts, {"ts": ts, "attr": rng.randint(1, stream.distinct)}))
    return out


def arrivals(half: float, seed: int = 3) -> tuple[list[Arrival], int, int]:
    """Return (fill + first half + second half arrivals, fill length, first timed index of half 2)."""
    rng = random.Random(seed)
    fill_span = max(s.window for s in BEFORE)
    fill = _phase(BEFORE, 0.0, fill_span, rng)
    first = _phase(BEFORE, fill_span, half, rng)
    second = _phase(_after(), fill_span + half, half, rng)
    return fill + first + second, len(fill), len(fill) + len(first)


def _stats(streams: Sequence[GolabStream]) -> dict[str, StreamStats]:
    return {s.name: StreamStats(s.name, s.rate, s.window, distinct=s.distinct) for s in streams}


@dataclass
class Run:
    """What one run measured."""

    label: str
    seconds: list[float]
    records: list[int]
    results: int
    changes: int
    replans: int
    plans: list[str]

    def rate(self, part: int | None = None) -> float:
        """Return records/s of half `part` (0 or 1), or overall."""
        if part is None:
            return sum(self.records) / sum(self.seconds)
        return self.records[part] / self.seconds[part]


def run(
    label: str, query: QueryDef, plan: JoinPlan, data: list[Arrival], fill: int, split: int, *, auto: bool
) -> Run:
    """Process the timed arrivals with `plan`, re-planning between chunks when `auto`."""
    engine = MultiJoin(query, plan)
    collector = StatsCollector(query)
    replanner = Replanner(query)
    for offset, (stream, ts, record) in enumerate(data[:fill]):
        engine.add(stream, record, ts=ts, offset=offset)
        collector.observe(stream, record, ts)
    engine.advance()
    replanner.observe(_stats(BEFORE))  # the plan chosen at the start
    plans = [",".join(plan.global_order)]
    seconds, records, results = [0.0, 0.0], [0, 0], 0
    clock = time.process_time
    position = fill
    while position < len(data):
        part = 0 if position < split else 1
        end = min(position + CHUNK, split if part == 0 else len(data))
        t0 = clock()
        for offset in range(position, end):
            stream, ts, record = data[offset]
            engine.add(stream, record, ts=ts, offset=offset)
            if auto:
                collector.observe(stream, record, ts)
        results += len(engine.advance())
        if auto and replanner.due(collector.rates()):
            new = replanner.observe(collector.snapshot())
            if new is not None:
                engine.set_plan(new)
                plans.append(f"{','.join(new.global_order)}@{data[end - 1][1]:.0f}")
        seconds[part] += clock() - t0
        records[part] += end - position
        position = end
    t0 = clock()
    results += len(engine.finish())
    seconds[1] += clock() - t0
    return Run(label, seconds, records, results, replanner.changes if auto else 0, replanner.replans, plans)


def main() -> None:
    """Run static, auto and hindsight on the same records and print their throughput."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=float, default=1.0, help="scale of the run length")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration; the fastest counts")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every plan change")
    args = parser.parse_args()
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    tune_gc()
    half = 1000.0 * args.records
    data, fill, split = arrivals(half, args.seed)
    query = golab_query(BEFORE, algorithm=ALGORITHM)
    planner = Planner()
    start_plan = planner.plan(query, _stats(BEFORE))
    hindsight = planner.plan(query, _stats(_after()))
    after = CostModel.build(_stats(_after()), algorithm=ALGORITHM)
    print(
        f"streams (lambda, T, v): {[(s.rate, s.window, s.distinct) for s in BEFORE]}; {FAST} x{FACTOR:g} "
        f"after {half:g} time units; {ALGORITHM}, eager; {len(data) - fill} timed records "
        f"({split - fill} + {len(data) - split})"
    )
    print(
        f"model, second half: static order {','.join(start_plan.global_order)} costs "
        f"{after.global_cost(start_plan.global_order):.0f}, best {','.join(hindsight.global_order)} "
        f"{after.global_cost(hindsight.global_order):.0f} comparisons per time unit"
    )
    configs = [
        ("static (best at start)", start_plan, False),
        ("auto (Replanner, 2x)", copy.copy(start_plan), True),
        ("hindsight static", hindsight, False),
    ]
    runs = []
    for label, plan, auto in configs:  # each `repeat` times; per half, the fastest run counts
        tries = [run(label, query, plan, data, fill, split, auto=auto) for _ in range(args.repeat)]
        best = tries[0]
        best.seconds = [min(t.seconds[part] for t in tries) for part in (0, 1)]
        runs.append(best)
    header = ("run", "half 1 rec/s", "half 2 rec/s", "overall rec/s", "changes", "re-plans")
    print(f"{header[0]:<24}{header[1]:>13}{header[2]:>13}{header[3]:>14}{header[4]:>9}{header[5]:>9}")
    for r in runs:
        print(
            f"{r.label:<24}{r.rate(0):>13.0f}{r.rate(1):>13.0f}{r.rate():>14.0f}{r.changes:>9}{r.replans:>9}"
        )
    print("auto's plans:", " -> ".join(runs[1].plans))
    print(
        f"auto / static overall: {runs[1].rate() / runs[0].rate():.2f}x; second half: "
        f"{runs[1].rate(1) / runs[0].rate(1):.2f}x"
    )
    if len({r.results for r in runs}) != 1:
        print("WARNING: the runs produced different result counts:", [r.results for r in runs])
    else:
        print(f"every run produced the same {runs[0].results} results")


if __name__ == "__main__":
    main()
