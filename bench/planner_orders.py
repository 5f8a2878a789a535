"""Golab & Özsu §6.2 on streamjoin: the cost model's predicted cost of all 24 orders vs measured throughput.

Table 5 streams, the paper's generator (`golab_workload.generate`: stream i with probability
lambda_i / sum, values uniform in 1..v_i, ts = idx / sum). The windows are filled first (untimed);
then the same records run under every global order (from copies of the same engine state), eager
evaluation and expiration, on one core (CPU time of this process). Per algorithm it prints each
order's predicted cost (comparisons per time unit), its measured records/s, and the best/worst
ratios measured vs predicted, plus the rank correlation between predicted cost and measured time
per record.

    python bench/planner_orders.py                    # about 1.5 minutes of CPU
    python bench/planner_orders.py --records 0.3 --segments 1   # about 10 s
"""

from __future__ import annotations

import argparse
import copy
import itertools
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golab_workload import TABLE5, TABLE8_BUCKETS, generate, golab_query
from streamjoin.engine import JoinPlan, MultiJoin, tune_gc
from streamjoin.planner import CostModel, Planner, StreamStats

__all__ = ["Measured", "main", "measure_orders", "spearman"]

CHUNK = 256
# (label, query algorithm, engine buckets, model buckets, timed records per segment at --records 1)
ALGORITHMS = {
    "nlj": ("nlj", None, 1.0, 1_024),
    "hash5": ("hash", TABLE8_BUCKETS, float(TABLE8_BUCKETS), 2_048),
    "hash-exact": ("hash", None, None, 4_096),
}


@dataclass(frozen=True)
class Measured:
    """One order: the model's predicted cost and the engine's measured throughput."""

    order: tuple[str, ...]
    predicted: float
    records_per_s: float
    results: int


def _model(buckets: float | None, algorithm: str) -> CostModel:
    stats = {
        s.name: StreamStats(s.name, s.rate, s.window, distinct=s.distinct, buckets=buckets) for s in TABLE5
    }
    return CostModel.build(stats, algorithm="hash" if algorithm == "hash" else "nlj")


def measure_orders(label: str, scale: float, seed: int = 7, segments: int = 3) -> list[Measured]:
    """Run every global order of Table 5 under one algorithm; return them cheapest predicted first.

    The timed records come in `segments` consecutive segments. For each segment every order runs
    on a copy of the same engine state (round robin over the orders, so contention on a shared
    machine spreads over all of them); the state then moves on through the segment, untimed. A
    record's cost varies a lot with its stream, its value and what the windows hold, so several
    segments average that out; an order's throughput is its records over its total CPU time.
    """
    algorithm, engine_buckets, model_buckets, records = ALGORITHMS[label]
    count = max(CHUNK, int(records * scale) // CHUNK * CHUNK)
    model = _model(model_buckets, algorithm)
    query = golab_query(TABLE5, algorithm=algorithm)
    total = sum(s.rate for s in TABLE5)
    fill = int(max(s.window for s in TABLE5) * total) + 1
    arrivals = generate(TABLE5, fill + count * segments, seed=seed)
    state = MultiJoin(query, buckets={s.name: engine_buckets for s in TABLE5} if engine_buckets else None)
    orders = list(itertools.permutations([s.name for s in TABLE5]))
    state.set_plan(JoinPlan.from_global(orders[0]))
    _feed(state, arrivals, 0, fill)
    seconds = dict.fromkeys(orders, 0.0)
    results = dict.fromkeys(orders, 0)
    for segment in range(segments):
        begin = fill + segment * count
        for order in orders:
            engine = copy.deepcopy(state)
            engine.set_plan(JoinPlan.from_global(order))
            start = time.process_time()  # CPU time: other work on shared cores does not count
            results[order] += _feed(engine, arrivals, begin, begin + count)
            seconds[order] += time.process_time() - start
        _feed(state, arrivals, begin, begin + count)
    rows = [Measured(o, model.global_cost(o), count * segments / seconds[o], results[o]) for o in orders]
    return sorted(rows, key=lambda m: m.predicted)


Arrivals = Sequence[tuple[str, float, dict[str, float]]]


def _feed(engine: MultiJoin, arrivals: Arrivals, begin: int, end: int) -> int:
    """Add arrivals[begin:end] in chunks, advancing after each; return the results released."""
    add, advance = engine.add, engine.advance
    results = 0
    for chunk in range(begin, end, CHUNK):
        for offset in range(chunk, min(chunk + CHUNK, end)):
            stream, ts, record = arrivals[offset]
            add(stream, record, ts=ts, offset=offset)
        results += len(advance())
    return results


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Return Spearman's rank correlation of two equally long sequences (ties averaged)."""

    def ranks(values: Sequence[float]) -> list[float]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        r = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / var if var else 0.0


def report(label: str, rows: list[Measured]) -> None:
    """Print one algorithm's table and summary."""
    chosen = Planner().plan_model(_model(ALGORITHMS[label][2], ALGORITHMS[label][0])).global_order
    print(f"\n== {label}: Table 5, all 24 global orders, eager ({rows[0].results} results per order) ==")
    print(f"{'order':<14}{'predicted':>11}{'rec/s':>9}{'pred. rank':>11}{'meas. rank':>11}")
    by_speed = sorted(rows, key=lambda m: -m.records_per_s)
    for i, m in enumerate(rows):
        mark = "  <- planner" if m.order == chosen else ""
        print(
            f"{','.join(m.order):<14}{m.predicted:>11.1f}{m.records_per_s:>9.0f}{i + 1:>11}"
            f"{by_speed.index(m) + 1:>11}{mark}"
        )
    best, worst = rows[0], rows[-1]
    fastest, slowest = by_speed[0], by_speed[-1]
    rho = spearman([m.predicted for m in rows], [1 / m.records_per_s for m in rows])
    chosen_row = next(m for m in rows if m.order == chosen)
    print(
        f"predicted worst/best cost: {worst.predicted / best.predicted:.2f}; measured throughput of the "
        f"predicted best/worst order: {best.records_per_s / worst.records_per_s:.2f}; measured "
        f"fastest/slowest: {fastest.records_per_s / slowest.records_per_s:.2f}"
    )
    print(
        f"planner's order {','.join(chosen)}: {chosen_row.records_per_s:.0f} rec/s, measured rank "
        f"{by_speed.index(chosen_row) + 1}/24 ({chosen_row.records_per_s / fastest.records_per_s:.0%} of the "
        f"fastest); Spearman(predicted cost, time per record) = {rho:.2f}"
    )
    if len({m.results for m in rows}) != 1:
        print("WARNING: the orders produced different result counts")


def main() -> None:
    """Run the experiment and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=float, default=1.0, help="scale of the timed records per order")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS), help="comma-separated subset")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--segments", type=int, default=3, help="timed segments per order")
    args = parser.parse_args()
    tune_gc()
    print("Table 5 streams (lambda, T, v):", [(s.rate, s.window, s.distinct) for s in TABLE5])
    for label in args.algorithms.split(","):
        report(label, measure_orders(label, args.records, args.seed, args.segments))


if __name__ == "__main__":
    main()
