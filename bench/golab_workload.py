"""Golab & Özsu's workload generator (section 6.1), shared by the engine and planner benchmarks.

Stream i is chosen with probability lambda_i / sum(lambda); its value is uniform in 1..v_i; the
timestamp is idx / sum(lambda), so stream i arrives at rate lambda_i per time unit and a window of T
holds lambda_i * T records, as the cost model assumes.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

from streamjoin.query import QueryDef, parse_query

__all__ = ["TABLE5", "TABLE8_BUCKETS", "GolabStream", "generate", "golab_query"]


@dataclass(frozen=True)
class GolabStream:
    """One stream of the experiment: rate, time window, distinct values."""

    name: str
    rate: float
    window: float
    distinct: int


TABLE5 = (
    GolabStream("S1", 10, 100, 500),
    GolabStream("S2", 1, 100, 50),
    GolabStream("S3", 1, 200, 40),
    GolabStream("S4", 3, 100, 5),
)
TABLE8_BUCKETS = 5


def golab_query(
    streams: Sequence[GolabStream],
    *,
    algorithm: str = "hash",
    order: Sequence[str] | None = None,
    evaluation: dict[str, object] | None = None,
    expiration: dict[str, object] | None = None,
) -> QueryDef:
    """Return the n-way equi-join on `attr` over `streams` with Golab's windows."""
    names = [s.name for s in streams]
    spec: dict[str, object] = {
        "name": "golab",
        "inputs": [
            {"stream": s.name, "topic": s.name, "timestamp": "ts", "window": {"range": s.window}}
            for s in streams
        ],
        "where": [[f"{a}.attr", "=", f"{b}.attr"] for a, b in itertools.pairwise(names)],
        "output": {"topic": "golab.out"},
        "algorithm": algorithm,
        "order": list(order) if order else "auto",
        "evaluation": evaluation or {"mode": "eager"},
        "expiration": expiration or {"mode": "eager"},
    }
    return parse_query(spec)


def generate(
    streams: Sequence[GolabStream], count: int, seed: int = 1
) -> list[tuple[str, float, dict[str, float]]]:
    """Return `count` arrivals (stream, ts, record) in timestamp order."""
    rng = random.Random(seed)
    total = sum(s.rate for s in streams)
    weights = [s.rate / total for s in streams]
    chosen = rng.choices(range(len(streams)), weights=weights, k=count)
    out = []
    for idx, i in enumerate(chosen):
        stream = streams[i]
        ts = idx / total
        out.append((stream.name, ts, {"ts": ts, "attr": rng.randint(1, stream.distinct)}))
    return out
