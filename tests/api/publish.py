"""Publish plan, statistics and status exactly as a joiner does (through `RegistryStore`)."""

from __future__ import annotations

from streamjoin.engine import JoinPlan
from streamjoin.registry import LatencyHistogram, OperatorStats, WindowStats

from .server import ApiServer

__all__ = ["QUERY", "WINDOWLESS_QUERY", "publish_stats"]

QUERY = {
    "name": "q",
    "cql": "SELECT * FROM a [RANGE 100], b [ROWS 50] WHERE a.src = b.src",
    "output": {"topic": "q.out"},
    "dead_letter": {"topic": "q.dead"},
}


WINDOWLESS_QUERY = {
    "name": "w",
    "inputs": [{"stream": "a"}, {"stream": "c"}],
    "where": [["a.src", "=", "c.src"]],
    "within": [["a", "c", 30]],
    "output": {"topic": "w.out"},
}
"""A W-join over streams a and c: neither input has a window, a `within` pair bounds them."""


def publish_stats(api: ApiServer, query: str = "q") -> None:
    """Write plan and statistics for two partitions exactly as a joiner does."""
    api.call("write_plan", query, JoinPlan.from_global(["a", "b"], 42.0), statistics={"a": {"rate": 2.0}})
    for partition in (0, 1):
        histogram = LatencyHistogram()
        histogram.observe(0.004, 10)
        histogram.observe(0.2, 2)
        operator = OperatorStats(
            watermark=1000 + partition,
            watermark_lag_ms=250 * (partition + 1),
            buffered=1,
            results=7,
            published=6,
            malformed={"a": 2, "b": 0},
            consumer_lag={"a": 5, "b": 1},
            latency_seconds=histogram.as_json(),
            observed_cost=10.5,
        )
        # the worker adds its shared window table's size to each stream's window
        a = WindowStats(
            records=3,
            bytes=300,
            distinct_keys=2,
            arrivals=11,
            expirations=8,
            late=1,
            probes=4,
            table_records=6,
            table_shared=2,
        )
        b = WindowStats(
            records=5, bytes=500, distinct_keys=4, arrivals=13, comparisons=9, table_records=5, table_shared=0
        )
        streams = {"a": a, "b": b}
        api.call("write_stats", query, partition, operator, streams)
        api.call("set_status", query, partition, worker=f"w{partition}", state="running", partitions=2)
