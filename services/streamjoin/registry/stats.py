"""The statistics a joiner publishes per (query, partition): typed, frozen, one JSON form each.

`WindowStats` is one input window's statistics, `OperatorStats` the join operator's. The worker
writes them (`RegistryStore.write_stats`), the control plane reads them back as the same records
(`read_stats`). Each field declares, in its `Stat` metadata, how it is exported: its Prometheus
metric (`streamjoin.api.metrics` derives the catalog from these declarations) and how it is summed
into the Control Tables (`streamjoin.api.services.tables`), so a field is named once, here.

Not to be confused with the engine's live counters (`streamjoin.engine.stats.WindowStats`, imported
here as `WindowCounters`): those are mutable and belong to one engine; `WindowStats.of` copies them,
field by field under the same names, into the published record.

>>> w = WindowStats(records=3, arrivals=11)
>>> WindowStats.from_json(w.to_json()) == w
True
>>> [f.name for f in stat_fields(WindowStats) if f.stat.summary]
['records', 'bytes', 'arrivals', 'late', 'shed', 'importance']
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeAlias, TypeVar

from streamjoin.engine.stats import WindowStats as WindowCounters
from streamjoin.registry._json import dumps, json_object

__all__ = [
    "Aggregate",
    "MetricKind",
    "OperatorStats",
    "PartitionStats",
    "Stat",
    "StatField",
    "WindowStats",
    "stat_fields",
]

MetricKind: TypeAlias = Literal["counter", "gauge", "histogram"]
Aggregate: TypeAlias = Literal["sum", "min", "max"]


@dataclass(frozen=True, slots=True)
class Stat:
    """How one statistic is exported: as a metric and in the Control Tables."""

    help: str
    kind: MetricKind = "counter"
    metric: str | None = None
    """The Prometheus family (without `_total`); None: not exported as a metric."""
    windowed: bool = False
    """The metric carries the `window` label (the window's CQL spelling)."""
    scale: float = 1.0
    """Multiply by this for the metric (ms to seconds)."""
    age: bool = False
    """The metric is `now - value` (a unix time in seconds)."""
    aggregate: Aggregate = "sum"
    """How partitions (and streams) combine in the Control Tables."""
    summary: str | None = None
    """The attribute of the query's Control Table that totals this field over streams and partitions."""
    per_stream: bool = False
    """The value is `{stream: number}` (an operator statistic kept per input)."""
    operator_table: bool = False
    """A window statistic the operator's Control Table totals over its streams."""
    table: bool = True
    """Shown in the Control Tables (False where the table shows the plan's own value instead)."""


def _stat(**kw: Any) -> Any:
    """Declare a statistic field (default None: not reported, exported as absent, never as 0)."""
    return field(default=None, metadata={"stat": Stat(**kw)})


@dataclass(frozen=True, slots=True)
class StatField:
    """One declared statistic of a record: the field's name and its `Stat`."""

    name: str
    stat: Stat


def stat_fields(record: type[WindowStats] | type[OperatorStats]) -> tuple[StatField, ...]:
    """Return the declared statistics of a statistics record, in field order."""
    return tuple(StatField(f.name, f.metadata["stat"]) for f in fields(record) if "stat" in f.metadata)


_R = TypeVar("_R", "WindowStats", "OperatorStats")


def _from_json(cls: type[_R], raw: str | bytes | Mapping[str, Any], what: str) -> _R:
    value = raw if isinstance(raw, Mapping) else json_object(raw, what)
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in value.items() if k in names})


def _to_json(record: WindowStats | OperatorStats) -> str:
    return dumps({f.name: getattr(record, f.name) for f in fields(record)})


@dataclass(frozen=True, slots=True)
class WindowStats:
    """One input window's statistics on one partition: the window now, and counters since start."""

    records: int | None = _stat(
        help="Records in the window now.",
        kind="gauge",
        metric="streamjoin_window_records",
        windowed=True,
        summary="window_records",
    )
    bytes: int | None = _stat(
        help="Bytes the window holds now.",
        kind="gauge",
        metric="streamjoin_window_bytes",
        windowed=True,
        summary="memory_bytes",
    )
    distinct_keys: int | None = _stat(
        help="Distinct join-key values in the window.",
        kind="gauge",
        metric="streamjoin_window_distinct_keys",
        windowed=True,
    )
    arrivals: int | None = _stat(
        help="Records read from the input (records in).",
        metric="streamjoin_input_records",
        summary="records_in",
    )
    inserts: int | None = _stat(
        help="Records inserted into the window.", metric="streamjoin_window_inserts", windowed=True
    )
    expirations: int | None = _stat(
        help="Records expired from the window.", metric="streamjoin_expirations", windowed=True
    )
    probes: int | None = _stat(
        help="Probes of this window by the join.", metric="streamjoin_probes", operator_table=True
    )
    comparisons: int | None = _stat(
        help="Predicate comparisons while probing this window.",
        metric="streamjoin_comparisons",
        operator_table=True,
    )
    results: int | None = _stat(help="Join results this window took part in.")
    late: int | None = _stat(
        help="Records that arrived below the watermark.", metric="streamjoin_late_records", summary="late"
    )
    filtered: int | None = _stat(
        help="Records dropped by a single-input filter.", metric="streamjoin_filtered_records"
    )
    shed: int | None = _stat(
        help="Records shed under the query's shedding budget (dropped on arrival or evicted).",
        metric="streamjoin_shed_records",
        summary="records_shed",
    )
    importance: float | None = _stat(
        help="Importance kept: the summed importance of the results this window's records completed.",
        metric="streamjoin_importance_kept",
        summary="importance_kept",
    )
    table_records: int | None = _stat(
        help="Records the shared window table of the stream's topic holds now, once for all queries.",
        kind="gauge",
        metric="streamjoin_window_table_records",
        windowed=True,
    )
    table_shared: int | None = _stat(
        help="Records of that table held by more than one window entry.",
        kind="gauge",
        metric="streamjoin_window_table_shared_records",
        windowed=True,
    )
    first_ts: float | None = _stat(help="The smallest event time seen.", kind="gauge", aggregate="min")
    last_ts: float | None = _stat(help="The largest event time seen.", kind="gauge", aggregate="max")

    @classmethod
    def of(cls, counters: WindowCounters, *, table_records: int, table_shared: int) -> WindowStats:
        """Return the published form of an engine's window counters, with its shared table's size."""
        copied = {f.name: getattr(counters, f.name) for f in fields(cls) if hasattr(counters, f.name)}
        return cls(**{**copied, "table_records": table_records, "table_shared": table_shared})

    def to_json(self) -> str:
        """Return the JSON stored in the stream's field of `streamjoin:stats:{query}:{partition}`."""
        return _to_json(self)

    @classmethod
    def from_json(cls, raw: str | Mapping[str, Any]) -> WindowStats:
        """Build the record from its JSON; unknown fields are ignored, missing ones are None."""
        return _from_json(cls, raw, "window statistics")


@dataclass(frozen=True, slots=True)
class OperatorStats:
    """One join operator's statistics on one partition (counters continue across a take-over)."""

    watermark: float | None = _stat(
        help="The query's watermark on this partition (timestamp units).",
        kind="gauge",
        aggregate="min",
        summary="watermark",
    )
    watermark_lag_ms: float | None = _stat(
        help="Wall-clock time minus the watermark.",
        kind="gauge",
        metric="streamjoin_watermark_lag_seconds",
        scale=0.001,
        aggregate="max",
        summary="watermark_lag_ms",
    )
    buffered: int | None = _stat(
        help="New records waiting for lazy evaluation.", kind="gauge", metric="streamjoin_buffered_records"
    )
    records_in: int | None = _stat(help="Records of the committed batches (malformed ones included).")
    results: int | None = _stat(help="Join results produced.", metric="streamjoin_results", summary="results")
    published: int | None = _stat(
        help="Records written to the output topic (records out).",
        metric="streamjoin_output_records",
        summary="records_out",
    )
    late: int | None = _stat(help="Records of the committed batches below the watermark.")
    malformed: Mapping[str, int] | None = _stat(
        help="Malformed records sent to the dead-letter topic.",
        metric="streamjoin_malformed_records",
        per_stream=True,
        summary="malformed",
    )
    dead_letters: int | None = _stat(help="Records written to the dead-letter topic.")
    consumer_lag: Mapping[str, int] | None = _stat(
        help="Records between the consumer position and the end of the input partition.",
        kind="gauge",
        metric="streamjoin_consumer_lag_records",
        per_stream=True,
        summary="consumer_lag",
    )
    latency_seconds: Mapping[str, Any] | None = _stat(
        help="Record consumed to its results published.",
        kind="histogram",
        metric="streamjoin_processing_latency_seconds",
    )
    plan_changes: int | None = _stat(
        help="Times this partition's engine changed its join order.", table=False
    )
    estimated_cost: float | None = _stat(
        help="The cost model's estimate for the plan running here.", table=False
    )
    observed_cost: float | None = _stat(
        help="Probes + comparisons per input record on this partition, over every committed batch.",
        kind="gauge",
        metric="streamjoin_plan_observed_cost",
        summary="observed_cost",
    )
    failing_since: float | None = _stat(
        help="Seconds the partition has been failing (its error: the query's status); absent if not.",
        kind="gauge",
        metric="streamjoin_partition_failing_seconds",
        age=True,
        aggregate="min",
        summary="failing_since",
    )
    updated_at: float | None = _stat(
        help="Seconds since the partition's statistics were refreshed.",
        kind="gauge",
        metric="streamjoin_stats_age_seconds",
        age=True,
        aggregate="max",
    )

    def to_json(self) -> str:
        """Return the JSON stored in the `operator` field of `streamjoin:stats:{query}:{partition}`."""
        return _to_json(self)

    @classmethod
    def from_json(cls, raw: str | bytes | Mapping[str, Any]) -> OperatorStats:
        """Build the record from its JSON; unknown fields are ignored, missing ones are None."""
        return _from_json(cls, raw, "operator statistics")


@dataclass(frozen=True, slots=True)
class PartitionStats:
    """One partition's statistics of a query: the operator's and one `WindowStats` per input stream."""

    partition: int
    operator: OperatorStats
    streams: Mapping[str, WindowStats]

    @classmethod
    def from_hash(cls, partition: int, fields: Mapping[str, str], operator_field: str) -> PartitionStats:
        """Build the record from `streamjoin:stats:{query}:{partition}` (field to JSON)."""
        values = {name: json.loads(raw) for name, raw in fields.items()}
        operator = OperatorStats.from_json(values.pop(operator_field, {}))
        return cls(partition, operator, {s: WindowStats.from_json(v) for s, v in values.items()})
