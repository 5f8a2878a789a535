"""Window-model benchmark: Kostowski & Claypool's invalidation strategies, Hammad et al.'s W-joins.

Part K (Kostowski, checks K4-K8 of the docs): a binary equi-join, A slow and B `--ratio` times
faster (the probed side), 100 join values, 30 s windows, timestamps in milliseconds. For each
expiration strategy (`probe`, `probe_insert`, `probe_all`, `eager` = the paper's "optimal") and each
algorithm with 100 buckets: the processing time of the second half (steady state), B's window size
sampled over time (mean), and the stale B records per bucket (records held minus the window's true
content, over the buckets). Then NLJ vs hash against the number of buckets (K8).

Part H (Hammad): a 3-way W-join `within` pairs (A-B w, B-C w, A-C 2w), no input windows, as
NLW-join (nested loops) and HW-join (hash), for rates and windows. MW-join's benefit (records
admitted in timestamp order, the window tested once on admission) is what the engine's release in
timestamp order gives both: reported as the eager run of the same query.

    python bench/window_models.py            # short (about a minute)
    python bench/window_models.py --full     # the figures of docs/performance.md
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import time
from typing import Any

from streamjoin.engine import MultiJoin
from streamjoin.query import parse_query

STRATEGIES = ("probe", "probe_insert", "probe_all", "eager")


def _kostowski_query(mode: str, algorithm: str, window_ms: int) -> Any:
    return parse_query(
        {
            "name": "kostowski",
            "inputs": [{"stream": s, "window": {"range": window_ms, "strict": True}} for s in ("a", "b")],
            "where": [["a.k", "=", "b.k"]],
            "output": {"topic": "o"},
            "expiration": {"mode": mode},
            "algorithm": algorithm,
        }
    )


def _kostowski_events(rate_a: float, ratio: float, seconds: float, values: int, seed: int) -> list[Any]:
    rnd = random.Random(seed)
    events = []
    for stream, rate in (("a", rate_a), ("b", rate_a * ratio)):
        t = 0.0
        while True:
            t += rnd.expovariate(rate)
            if t >= seconds:
                break
            events.append((int(t * 1000), stream, rnd.randrange(values)))
    events.sort()
    return events


def kostowski(
    mode: str, algorithm: str, buckets: int, events: list[Any], window_ms: int, steady_ms: float
) -> dict[str, Any]:
    """Run one strategy; time from `steady_ms` on, B's window sampled, stale records per bucket."""
    engine = MultiJoin(_kostowski_query(mode, algorithm, window_ms), buckets={"a": buckets, "b": buckets})
    b_ts = [e[0] for e in events if e[1] == "b"]
    samples: list[int] = []
    stale: list[float] = []
    results = 0
    started = None
    probed = engine.windows["b"].table  # a `ProbeCleanedWindow` under the scoped strategies
    probe_start = (0, 0)
    for i, (ts, stream, key) in enumerate(events):
        if started is None and ts >= steady_ms:
            started = time.perf_counter()
            probe_start = (getattr(probed, "probed", 0), getattr(probed, "stale_found", 0))
        engine.add(stream, {"k": key}, ts=ts, offset=i)
        results += len(engine.advance())
        if started is not None and i % 500 == 0:
            held = engine.stats["b"].records
            live = bisect.bisect_right(b_ts, ts) - bisect.bisect_right(b_ts, ts - window_ms)
            samples.append(held)
            stale.append((held - live) / buckets)
    elapsed = time.perf_counter() - (started or time.perf_counter())
    results += len(engine.finish())
    probes = getattr(probed, "probed", 0) - probe_start[0]
    found = getattr(probed, "stale_found", 0) - probe_start[1]
    return {
        "mode": mode,
        "algorithm": algorithm,
        "buckets": buckets,
        "seconds": round(elapsed, 3),
        "b_window_mean": round(sum(samples) / max(1, len(samples))),
        "stale_per_bucket": round(sum(stale) / max(1, len(stale)), 2),
        "stale_found_per_probe": round(found / probes, 2) if probes else None,
        "results": results,
    }


def _hammad_query(algorithm: str, w: int) -> Any:
    return parse_query(
        {
            "name": "wjoin",
            "inputs": [{"stream": s} for s in "abc"],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
            "within": [["a", "b", w], ["b", "c", w], ["a", "c", 2 * w]],
            "output": {"topic": "o"},
            "algorithm": algorithm,
        }
    )


def hammad(algorithm: str, rate: float, w: int, seconds: float, values: int, seed: int) -> dict[str, Any]:
    """Run the 3-way W-join; return records/s and results."""
    rnd = random.Random(seed)
    events = []
    for stream in "abc":
        t = 0.0
        while (t := t + rnd.expovariate(rate)) < seconds:
            events.append((int(t * 1000), stream, rnd.randrange(values)))
    events.sort()
    engine = MultiJoin(_hammad_query(algorithm, w))
    start = time.perf_counter()
    results = 0
    for i, (ts, stream, key) in enumerate(events):
        engine.add(stream, {"k": key}, ts=ts, offset=i)
        results += len(engine.advance())
    results += len(engine.finish())
    elapsed = time.perf_counter() - start
    name = {"nlj": "NLW-join", "hash": "HW-join"}[algorithm]
    return {
        "algorithm": name,
        "rate": rate,
        "w_ms": w,
        "records_per_s": round(len(events) / elapsed),
        "results": results,
    }


def main() -> None:
    """Run both parts and print one JSON object per line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the docs' sizes (several minutes)")
    parser.add_argument("--ratio", type=float, default=100.0, help="lambda_B / lambda_A")
    args = parser.parse_args()
    # The notes' K4 setting: lambda_A 10/s, lambda_B 1000/s, 30 s windows, 150 s, steady from 60 s.
    seconds, rate_a, window_ms = (150.0, 10.0, 30_000) if args.full else (40.0, 5.0, 10_000)
    steady = 60_000 if args.full else 20_000
    events = _kostowski_events(rate_a, args.ratio, seconds, 100, seed=1)
    for mode in STRATEGIES:
        print(
            json.dumps({"part": "K", **kostowski(mode, "hash", 100, events, window_ms, steady)}), flush=True
        )
    # K8: a shorter run (NLJ scans the whole 30 s window of B for every A arrival).
    k8_seconds, k8_steady = (45.0, 30_000) if args.full else (25.0, 15_000)
    k8_events = _kostowski_events(rate_a, args.ratio, k8_seconds, 100, seed=1)
    for buckets in (1, 10, 50, 100, 200, 400) if args.full else (1, 10, 100):
        for algorithm in ("nlj", "hash") if buckets == 1 else ("hash",):
            row = kostowski("probe_insert", algorithm, buckets, k8_events, window_ms, k8_steady)
            print(json.dumps({"part": "K8", **row}), flush=True)
    rates = (5.0, 20.0, 50.0) if args.full else (5.0, 20.0)
    windows = (100, 1000, 2000) if args.full else (100, 1000)
    for rate in rates:
        for w in windows:
            for algorithm in ("nlj", "hash"):
                row = hammad(algorithm, rate, w, 20.0, 20, seed=2)
                print(json.dumps({"part": "H", **row}), flush=True)


if __name__ == "__main__":
    main()
