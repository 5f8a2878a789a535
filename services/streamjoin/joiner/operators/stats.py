"""The live counters of one operator, published as the shared `OperatorStats` and `WindowStats` records.

Counters that are committed with the batches (records in, results, late, malformed, dead letters)
continue from the committed values when an operator takes a partition over, so they stay monotonic.
`OperatorCounters` is mutable and belongs to one operator; what crosses to the control plane is the
frozen record it returns (`streamjoin.registry.stats`, docs/registry.md "Statistics").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

from streamjoin.engine import MultiJoin
from streamjoin.joiner.batch.builder import BuiltBatch
from streamjoin.kafka import TopicPartition
from streamjoin.query.model import QueryDef
from streamjoin.registry.histogram import LatencyHistogram
from streamjoin.registry.stats import OperatorStats, WindowStats

__all__ = ["OperatorCounters", "window_stats"]

# The committed counters of the observed cost: the engine's probes + comparisons, and the records
# read meanwhile. Committed with each batch, they continue across attempts like `records_in`; the
# engine's own counts start again at 0 with every new engine (a control change, a restart), which
# made the cost read 0 when it was divided by the committed `records_in`.
_OBSERVED = ("observed_work", "observed_records")


class OperatorCounters:
    """Counters, lag and latency of one (query, partition) operator."""

    def __init__(self, query: QueryDef, internal_topics: Mapping[str, str] | None = None) -> None:
        """Count for `query` (`internal_topics`: where each re-keyed input is read, by stream)."""
        self.query = query
        self.counters: dict[str, int] = {}
        self.published: dict[str, int] = {"results": 0, "dead": 0}
        self.latency = LatencyHistogram()
        self.consumer_lag: dict[str, int] = {}
        internal = internal_topics or {}
        self._topic_streams = [(internal.get(i.stream, i.topic), i.stream) for i in query.inputs]

    def restore(self, committed: Mapping[str, int]) -> None:
        """Continue from the committed counters."""
        self.counters = dict(committed)

    def on_batch(
        self,
        built: BuiltBatch,
        highwater: Callable[[TopicPartition], int | None],
        partition: int,
        offsets: Mapping[str, int],
    ) -> None:
        """Count one committed batch and refresh the consumer lag of input `partition`."""
        c = self.counters
        c["records_in"] = c.get("records_in", 0) + built.records
        c["results"] = c.get("results", 0) + len(built.results)
        c["late"] = c.get("late", 0) + built.late
        c["dead"] = c.get("dead", 0) + len(built.dead)
        for name in _OBSERVED:
            c[name] = c.get(name, 0) + built.commit.counters.get(name, 0)
        for stream, n in built.malformed.items():
            c[f"malformed:{stream}"] = c.get(f"malformed:{stream}", 0) + n
        for topic, stream in self._topic_streams:
            if topic not in offsets:
                continue
            high = highwater(TopicPartition(topic, partition))
            if high is not None:
                self.consumer_lag[stream] = max(high - offsets[topic], 0)

    def observe_latency(self, seconds: float, count: int) -> None:
        """Record the processing latency of `count` results."""
        self.latency.observe(max(seconds, 0.0), count)

    def snapshot(self, engine: MultiJoin | None) -> OperatorStats:
        """Return the operator's statistics now, as published (`engine`: None before it is built)."""
        c = self.counters
        watermark = engine.watermark if engine is not None else None
        finite = watermark is not None and math.isfinite(watermark)
        now_ms = time.time() * 1000
        lag_ms = now_ms - watermark if finite and watermark is not None and watermark > 1e11 else None
        records = c.get("records_in", 0)
        work, costed = (c.get(name, 0) for name in _OBSERVED)
        return OperatorStats(
            watermark=watermark if finite else None,
            watermark_lag_ms=lag_ms,
            buffered=engine.buffered if engine is not None else 0,
            records_in=records,
            results=c.get("results", 0),
            published=self.published["results"],
            late=c.get("late", 0),
            malformed={s: c.get(f"malformed:{s}", 0) for s in self.query.stream_names},
            dead_letters=c.get("dead", 0),
            consumer_lag=dict(self.consumer_lag),
            latency_seconds=self.latency.as_json(),
            plan_changes=engine.plan_changes if engine is not None else 0,
            estimated_cost=engine.plan.estimated_cost if engine is not None else None,
            observed_cost=work / costed if costed else None,
            updated_at=time.time(),
        )


def window_stats(
    query: QueryDef, engine: MultiJoin | None, tables: Mapping[str, tuple[int, int]]
) -> dict[str, WindowStats]:
    """Return each input window's statistics, with the size of its topic's shared table (`tables`).

    Args:
        query: the query the engine runs.
        engine: the operator's engine; None (not built yet) publishes no window.
        tables: per input topic, (records, records held by more than one entry) of its shared table.
    """
    if engine is None:
        return {}
    counters = engine.stats
    return {
        i.stream: WindowStats.of(
            counters[i.stream], table_records=tables[i.topic][0], table_shared=tables[i.topic][1]
        )
        for i in query.inputs
    }
