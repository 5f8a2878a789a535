"""`/metrics`: every Control-Table statistic as a Prometheus metric (catalog: docs/metrics.md).

`ObservationCollector` is a prometheus-client custom collector over one `Observation`, the
statistics the joiners published in Redis, read at scrape time. Nothing is kept between scrapes:
each scrape reads Redis once and renders a fresh registry, so the API holds no metric state and
any number of API replicas export the same values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from streamjoin.api.services.observe import Observation, QueryObservation, number, stream_counter
from streamjoin.api.services.tables import window_label
from streamjoin.registry import parse_histogram

__all__ = ["CATALOG", "MetricSpec", "ObservationCollector", "render_metrics"]

Kind = Literal["counter", "gauge", "histogram"]
Source = Literal["stream", "operator", "operator_by_stream", "plan", "query", "system"]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One exported metric: its name, type, labels, and where in the published statistics it comes from."""

    name: str
    kind: Kind
    labels: tuple[str, ...]
    source: Source
    field: str
    help: str
    scale: float = 1.0


_S = ("query", "stream", "partition")
_W = ("query", "stream", "window", "partition")
_P = ("query", "partition")

CATALOG: tuple[MetricSpec, ...] = (
    MetricSpec(
        "streamjoin_input_records",
        "counter",
        _S,
        "stream",
        "arrivals",
        "Records read from the input (records in).",
    ),
    MetricSpec(
        "streamjoin_window_inserts", "counter", _W, "stream", "inserts", "Records inserted into the window."
    ),
    MetricSpec("streamjoin_window_records", "gauge", _W, "stream", "records", "Records in the window now."),
    MetricSpec("streamjoin_window_bytes", "gauge", _W, "stream", "bytes", "Bytes the window holds now."),
    MetricSpec(
        "streamjoin_window_table_records",
        "gauge",
        _W,
        "stream",
        "table_records",
        "Records the shared window table of the stream's topic holds now, once for all queries.",
    ),
    MetricSpec(
        "streamjoin_window_table_shared_records",
        "gauge",
        _W,
        "stream",
        "table_shared",
        "Records of that table held by more than one window entry.",
    ),
    MetricSpec(
        "streamjoin_window_distinct_keys",
        "gauge",
        _W,
        "stream",
        "distinct_keys",
        "Distinct join-key values in the window.",
    ),
    MetricSpec(
        "streamjoin_expirations", "counter", _W, "stream", "expirations", "Records expired from the window."
    ),
    MetricSpec("streamjoin_probes", "counter", _S, "stream", "probes", "Probes of this window by the join."),
    MetricSpec(
        "streamjoin_comparisons",
        "counter",
        _S,
        "stream",
        "comparisons",
        "Predicate comparisons while probing this window.",
    ),
    MetricSpec(
        "streamjoin_filtered_records",
        "counter",
        _S,
        "stream",
        "filtered",
        "Records dropped by a single-input filter.",
    ),
    MetricSpec(
        "streamjoin_late_records",
        "counter",
        _S,
        "stream",
        "late",
        "Records that arrived below the watermark.",
    ),
    MetricSpec(
        "streamjoin_malformed_records",
        "counter",
        _S,
        "operator_by_stream",
        "malformed",
        "Malformed records sent to the dead-letter topic.",
    ),
    MetricSpec(
        "streamjoin_consumer_lag_records",
        "gauge",
        _S,
        "operator_by_stream",
        "consumer_lag",
        "Records between the consumer position and the end of the input partition.",
    ),
    MetricSpec("streamjoin_results", "counter", _P, "operator", "results", "Join results produced."),
    MetricSpec(
        "streamjoin_output_records",
        "counter",
        _P,
        "operator",
        "published",
        "Records written to the output topic (records out).",
    ),
    MetricSpec(
        "streamjoin_buffered_records",
        "gauge",
        _P,
        "operator",
        "buffered",
        "New records waiting for lazy evaluation.",
    ),
    MetricSpec(
        "streamjoin_watermark_lag_seconds",
        "gauge",
        _P,
        "operator",
        "watermark_lag_ms",
        "Wall-clock time minus the watermark.",
        0.001,
    ),
    MetricSpec(
        "streamjoin_plan_observed_cost",
        "gauge",
        _P,
        "operator",
        "observed_cost",
        "The cost-model quantity as measured on this partition.",
    ),
    MetricSpec(
        "streamjoin_stats_age_seconds",
        "gauge",
        _P,
        "operator",
        "updated_at",
        "Seconds since the partition's statistics were refreshed.",
    ),
    MetricSpec(
        "streamjoin_processing_latency_seconds",
        "histogram",
        _P,
        "operator",
        "latency_seconds",
        "Record consumed to its results published.",
    ),
    MetricSpec(
        "streamjoin_plan_changes",
        "counter",
        ("query",),
        "plan",
        "plan_changes",
        "Times the chosen join order changed.",
    ),
    MetricSpec(
        "streamjoin_plan_estimated_cost",
        "gauge",
        ("query",),
        "plan",
        "estimated_cost",
        "The cost model's estimate for the chosen plan.",
    ),
    MetricSpec(
        "streamjoin_plan_info",
        "gauge",
        ("query", "global_order"),
        "plan",
        "global_order",
        "Always 1; global_order: the chosen global join order, stream names joined by commas.",
    ),
    MetricSpec(
        "streamjoin_query_paused", "gauge", ("query",), "query", "paused", "1 if the query is paused."
    ),
    MetricSpec(
        "streamjoin_query_memory_budget_bytes",
        "gauge",
        ("query",),
        "query",
        "memory_budget_bytes",
        "The memory budget control, if set.",
    ),
    MetricSpec(
        "streamjoin_query_revision", "gauge", ("query",), "query", "revision", "The definition's revision."
    ),
    MetricSpec(
        "streamjoin_queries", "gauge", ("status",), "system", "status", "Registered queries by status."
    ),
    MetricSpec("streamjoin_streams", "gauge", (), "system", "streams", "Registered streams."),
    MetricSpec("streamjoin_registry_version", "gauge", (), "system", "version", "The registry version."),
    MetricSpec(
        "streamjoin_workers", "gauge", (), "system", "workers", "Joiner workers with a live heartbeat."
    ),
)
"""Every metric `/metrics` exports (counters get `_total`, histograms `_bucket`/`_sum`/`_count`)."""

_STATUSES = ("pending", "positioning", "running", "paused")


def _family(spec: MetricSpec) -> Metric:
    if spec.kind == "counter":
        return CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
    if spec.kind == "histogram":
        return HistogramMetricFamily(spec.name, spec.help, labels=spec.labels)
    return GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)


class ObservationCollector(Collector):
    """Export one `Observation` as the metrics of `CATALOG`."""

    def __init__(self, observation: Observation) -> None:
        """Collect from `observation` (read from Redis for this scrape)."""
        self._observation = observation

    def collect(self) -> Iterator[Metric]:
        """Yield one family per catalog entry, with a sample per entity that published the field."""
        for spec in CATALOG:
            family = _family(spec)
            if spec.source == "system":
                self._system(spec, family)
            else:
                for qo in self._observation.queries.values():
                    self._query(spec, family, qo)
            yield family

    def _system(self, spec: MetricSpec, family: Metric) -> None:
        obs = self._observation
        if spec.field == "status":
            counts = dict.fromkeys(_STATUSES, 0)
            for qo in obs.queries.values():
                counts[qo.status] += 1
            for status, n in counts.items():
                _add(family, [status], n)
        else:
            value = {
                "streams": len(obs.registry.streams),
                "version": obs.registry.version,
                "workers": len(obs.workers),
            }
            _add(family, [], value[spec.field])

    def _query(self, spec: MetricSpec, family: Metric, qo: QueryObservation) -> None:
        q = qo.query
        if spec.source == "query":
            attrs = {
                "paused": float(q.controls.paused),
                "memory_budget_bytes": q.controls.memory_budget_bytes,
                "revision": q.revision,
            }
            _add(family, [q.name], number(attrs[spec.field]))
            return
        if spec.source == "plan":
            if qo.plan is None:
                return
            if spec.field == "global_order":  # an info metric: the value is in a label
                if qo.plan.global_order:
                    _add(family, [q.name, ",".join(qo.plan.global_order)], 1.0)
            else:
                _add(family, [q.name], number(getattr(qo.plan, spec.field)))
            return
        windows: Mapping[str, str] = {
            str(i["stream"]): window_label(i.get("window", {})) for i in q.definition.get("inputs", ())
        }
        for stats in qo.stats:
            partition = str(stats.partition)
            if spec.source == "operator":
                self._operator(spec, family, [q.name, partition], stats.operator.get(spec.field))
                continue
            for stream, window in windows.items():
                if spec.source == "stream":
                    sample = number(stats.streams.get(stream, {}).get(spec.field))
                else:
                    sample = stream_counter(stats.operator, spec.field, stream)
                labels = [q.name, stream, partition]
                if "window" in spec.labels:
                    labels.insert(2, window)
                _add(family, labels, sample)

    def _operator(self, spec: MetricSpec, family: Metric, labels: list[str], raw: object) -> None:
        if spec.kind == "histogram":
            parsed = parse_histogram(raw)
            if parsed is not None and isinstance(family, HistogramMetricFamily):
                buckets, seconds = parsed
                family.add_metric(labels, buckets=buckets, sum_value=seconds)
            return
        value = number(raw)
        if value is not None and spec.field == "updated_at":
            value = max(self._observation.at - value, 0.0)
        _add(family, labels, value * spec.scale if value is not None else None)


def _add(family: Metric, labels: list[str], value: float | None) -> None:
    if value is not None and isinstance(family, CounterMetricFamily | GaugeMetricFamily):
        family.add_metric(labels, value)


def render_metrics(observation: Observation) -> bytes:
    """Return the Prometheus text exposition of `observation`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ObservationCollector(observation))
    return generate_latest(registry)
