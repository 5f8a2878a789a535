"""Golab & Özsu's stream parameters (Tables 5-7) and helpers shared by the planner tests."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

from streamjoin.planner.cost import CostModel
from streamjoin.planner.stats import StreamStats
from streamjoin.query import QueryDef, parse_query

__all__ = ["TABLES", "model_of", "query_of", "random_streams", "stats_of"]

# (rate, window T, distinct v) per stream S1..S4.
TABLES: dict[int, list[tuple[float, float, float]]] = {
    5: [(10, 100, 500), (1, 100, 50), (1, 200, 40), (3, 100, 5)],
    6: [(100, 100, 200), (1, 100, 200), (1, 100, 20), (3, 100, 2)],
    7: [(11, 100, 200), (10, 100, 100), (1, 100, 65), (1, 100, 20)],
}


def stats_of(table: int, buckets: float = 1) -> dict[str, StreamStats]:
    """Return the statistics of a paper table, streams S1..S4."""
    return {
        f"S{i}": StreamStats(f"S{i}", rate, window, distinct=v, buckets=buckets)
        for i, (rate, window, v) in enumerate(TABLES[table], 1)
    }


def model_of(table: int, buckets: float = 1, tau: float | None = None) -> CostModel:
    """Return the cost model of a paper table (one common join attribute)."""
    return CostModel.build(stats_of(table, buckets), tau=tau)


def query_of(names: list[str], windows: list[float] | None = None, **fields: Any) -> QueryDef:
    """Return a query equi-joining `names` on a common attribute `k` (a chain of equalities)."""
    windows = windows or [100.0] * len(names)
    raw: dict[str, Any] = {
        "name": "q",
        "inputs": [
            {"stream": s, "timestamp": "ts", "window": {"range": w}}
            for s, w in zip(names, windows, strict=True)
        ],
        "where": [[f"{a}.k", "=", f"{b}.k"] for a, b in itertools.pairwise(names)],
        "output": {"topic": "out"},
    }
    raw.update(fields)
    return parse_query(raw)


def random_streams(n: int, rnd: random.Random, *, hashed: bool = False) -> dict[str, StreamStats]:
    """Return n random streams: rates 0.5..100 and distinct counts 2..1000 (log-uniform)."""
    out = {}
    for i in range(1, n + 1):
        out[f"S{i}"] = StreamStats(
            f"S{i}",
            rate=math.exp(rnd.uniform(math.log(0.5), math.log(100))),
            window=rnd.choice([50, 100, 200, 400]),
            distinct=round(math.exp(rnd.uniform(math.log(2), math.log(1000)))),
            buckets=rnd.choice([1, 1, 2, 5, 20]) if hashed else 1,
        )
    return out
