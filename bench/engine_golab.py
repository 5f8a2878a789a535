"""Golab & Özsu's experiments (section 6) on streamjoin's engine: maximum input rate on one core.

Prints, for the Table 5 streams: best and worst plan under eager/lazy evaluation for nested loops,
Golab's 5-bucket hash join (the Table 8 setting) and streamjoin's exact-value hash join; then the
Fig. 4(a) sweep of tau (4 windows, T=100, lambda=1, v=50) for NLJ and 2/10/30 buckets. A bare
40-line eager hash join runs on the same workload as the reference ("peer") for the ratio.

Rates are input records per CPU second of this process (`time.process_time`): "records/s on one
core", and stable while other processes share the machine, which wall-clock rates are not.

    python bench/engine_golab.py            # about 3 minutes
    python bench/engine_golab.py --quick    # about 40 seconds
"""

from __future__ import annotations

import argparse
import itertools
import resource
import statistics
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golab_workload import TABLE5, GolabStream, generate, golab_query
from streamjoin.engine import MultiJoin, tune_gc

BEST = ("S1", "S2", "S3", "S4")
WORST = ("S4", "S3", "S2", "S1")  # the cost model's worst order for Table 5 (86850)
CHUNK = 256


def measure(
    streams: Sequence[GolabStream],
    *,
    order: Sequence[str],
    algorithm: str,
    buckets: int | None,
    tau: float | None,
    seconds: float,
) -> dict[str, float]:
    """Return records/s, results/s and per-record latency percentiles of one configuration."""
    lazy = {"mode": "lazy", "every": tau} if tau else {"mode": "eager"}
    query = golab_query(streams, algorithm=algorithm, order=order, evaluation=lazy, expiration=lazy)
    engine = MultiJoin(query, buckets={s.name: buckets for s in streams} if buckets else None)
    total_rate = sum(s.rate for s in streams)
    fill = int(max(s.window for s in streams) * total_rate) + 1
    arrivals = generate(streams, fill + 2_000_000, seed=7)
    offset = 0
    for stream, ts, record in arrivals[:fill]:  # fill the windows first, untimed
        engine.add(stream, record, ts=ts, offset=offset)
        offset += 1
    engine.advance()
    results = processed = 0
    latencies: list[float] = []
    add, advance, clock = engine.add, engine.advance, time.process_time
    start = clock()
    position = fill
    while clock() - start < seconds and position + CHUNK <= len(arrivals):
        t0 = clock()
        for stream, ts, record in arrivals[position : position + CHUNK]:
            add(stream, record, ts=ts, offset=offset)
            offset += 1
        results += len(advance())
        latencies.append((clock() - t0) / CHUNK)
        position += CHUNK
        processed += CHUNK
    elapsed = clock() - start
    quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [latencies[0]] * 99
    return {
        "records_per_s": processed / elapsed,
        "results_per_s": results / elapsed,
        "results_per_record": results / max(processed, 1),
        "p50_us": quantiles[49] * 1e6,
        "p99_us": quantiles[98] * 1e6,
    }


def bare_hash_join(streams: Sequence[GolabStream], seconds: float) -> float:
    """Return records/s of a minimal eager 4-way hash join: the reference the engine is held to."""
    names = [s.name for s in streams]
    windows = {s.name: s.window for s in streams}
    total_rate = sum(s.rate for s in streams)
    fill = int(max(s.window for s in streams) * total_rate) + 1
    arrivals = generate(streams, fill + 2_000_000, seed=7)
    all_entries: dict[str, deque[tuple[float, dict[str, Any]]]] = {n: deque() for n in names}
    index: dict[str, dict[Any, deque[tuple[float, dict[str, Any]]]]] = {n: {} for n in names}

    def process(stream: str, ts: float, record: dict[str, Any]) -> int:
        for name in names:
            entries, bound = all_entries[name], ts - windows[name]
            while entries and entries[0][0] < bound:
                old = entries.popleft()
                bucket = index[name][old[1]["attr"]]
                bucket.popleft()
                if not bucket:
                    del index[name][old[1]["attr"]]
        entry = (ts, record)
        all_entries[stream].append(entry)
        index[stream].setdefault(record["attr"], deque()).append(entry)
        lists: list[Any] = []
        for name in names:
            if name == stream:
                lists.append((entry,))
                continue
            bucket = index[name].get(record["attr"])
            if not bucket:
                return 0
            lists.append(bucket)
        return len(list(itertools.product(*lists)))

    for stream, ts, record in arrivals[:fill]:
        process(stream, ts, record)
    start = time.process_time()
    processed = 0
    for stream, ts, record in arrivals[fill:]:
        process(stream, ts, record)
        processed += 1
        if not processed % CHUNK and time.process_time() - start > seconds:
            break
    return processed / (time.process_time() - start)


def main() -> None:
    """Run the experiments and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, fewer tau values")
    args = parser.parse_args()
    seconds = 1.0 if args.quick else 3.0
    tune_gc()

    print("== Table 5 streams (lambda, T, v) =", [(s.rate, s.window, s.distinct) for s in TABLE5])
    bare = bare_hash_join(TABLE5, seconds)
    print(f"bare 40-line eager hash join (reference): {bare:,.0f} records/s")
    print(
        f"{'algorithm':<22}{'evaluation':<12}{'best rec/s':>12}{'worst rec/s':>12}{'best/worst':>11}"
        f"{'results/s':>12}{'p50 us':>8}{'p99 us':>8}"
    )
    figures: dict[tuple[str, str], float] = {}
    for label, algorithm, buckets in (
        ("NLJ", "nlj", None),
        ("hash, 5 buckets", "hash", 5),
        ("hash, exact keys", "hash", None),
    ):
        for tau in (None, 5, 10):
            best = measure(TABLE5, order=BEST, algorithm=algorithm, buckets=buckets, tau=tau, seconds=seconds)
            worst = measure(
                TABLE5, order=WORST, algorithm=algorithm, buckets=buckets, tau=tau, seconds=seconds
            )
            mode = "eager" if tau is None else f"lazy {tau}"
            figures[(label, mode)] = best["records_per_s"]
            print(
                f"{label:<22}{mode:<12}{best['records_per_s']:>12,.0f}{worst['records_per_s']:>12,.0f}"
                f"{best['records_per_s'] / worst['records_per_s']:>11.2f}{best['results_per_s']:>12,.0f}"
                f"{best['p50_us']:>8.1f}{best['p99_us']:>8.1f}"
            )
    print(
        f"hash (5 buckets) / NLJ, eager best plan: "
        f"{figures[('hash, 5 buckets', 'eager')] / figures[('NLJ', 'eager')]:.2f}  (paper: 7.15)"
    )
    print(f"engine eager exact hash / bare join: {figures[('hash, exact keys', 'eager')] / bare:.2f}")

    print("\n== Fig. 4(a): 4 windows, T=100, lambda=1, v=50; records/s by tau (lazy evaluation + expiration)")
    equal = tuple(GolabStream(f"S{i}", 1, 100, 50) for i in range(1, 5))
    taus = (1, 5, 15, 30) if args.quick else (1, 2, 4, 8, 15, 30, 50)
    print(f"{'tau':>5}" + "".join(f"{name:>10}" for name in ("NLJ", "HASH2", "HASH10", "HASH30")))
    for tau in taus:
        row = [
            measure(
                equal, order=("S1", "S2", "S3", "S4"), algorithm=alg, buckets=b, tau=tau, seconds=seconds / 2
            )["records_per_s"]
            for alg, b in (("nlj", None), ("hash", 2), ("hash", 10), ("hash", 30))
        ]
        print(f"{tau:>5}" + "".join(f"{r:>10,.0f}" for r in row))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak resident memory: {peak_mb:.0f} MiB")


if __name__ == "__main__":
    main()
