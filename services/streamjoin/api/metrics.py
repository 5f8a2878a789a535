"""`/metrics`: every published statistic as a Prometheus metric (catalog: docs/metrics.md).

`ObservationCollector` is a prometheus-client custom collector over one `Observation`, the
statistics the joiners published in Redis, read at scrape time. Nothing is kept between scrapes:
each scrape reads Redis once and renders a fresh registry, so the API holds no metric state and
any number of API replicas export the same values.

The statistics' metrics are derived from the records the joiners publish (`WindowStats`,
`OperatorStats` in `streamjoin.registry.stats`): each field declares its metric there. Only the
metrics of the plan, the query's controls and the system are listed here, each naming the attribute
it reads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from streamjoin.api.services.observe import Observation, QueryObservation, number
from streamjoin.api.services.tables import window_label
from streamjoin.registry import (
    QUERY_STATUSES,
    REFUSAL_REASONS,
    OperatorStats,
    RefusalReason,
    WindowStats,
    parse_histogram,
)
from streamjoin.registry.stats import MetricKind, stat_fields

__all__ = ["CATALOG", "MetricSpec", "ObservationCollector", "render_metrics"]

Source = Literal["window", "operator", "operator_by_stream", "query", "system", "process"]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One exported metric: its name, type, labels, and the attribute of the published records it reads.

    `field` is a field of `WindowStats` (source `window`) or `OperatorStats` (`operator`,
    `operator_by_stream`), an attribute path of a `QueryObservation` (`query`: `plan.estimated_cost`,
    `query.controls.paused`) or of the `Observation` (`system`); `process`: a count this API process
    keeps itself (`ObservationCollector`'s `refused`), not read from Redis.
    """

    name: str
    kind: MetricKind
    labels: tuple[str, ...]
    source: Source
    field: str
    help: str
    scale: float = 1.0
    age: bool = False


_S = ("query", "stream", "partition")
_W = ("query", "stream", "window", "partition")
_P = ("query", "partition")


def _derived() -> Iterator[MetricSpec]:
    """Yield the metric of every statistic field that declares one."""
    for f in stat_fields(WindowStats):
        if f.stat.metric:
            yield MetricSpec(
                f.stat.metric, f.stat.kind, _W if f.stat.windowed else _S, "window", f.name, f.stat.help
            )
    for f in stat_fields(OperatorStats):
        if f.stat.metric:
            source: Source = "operator_by_stream" if f.stat.per_stream else "operator"
            yield MetricSpec(
                f.stat.metric,
                f.stat.kind,
                _S if f.stat.per_stream else _P,
                source,
                f.name,
                f.stat.help,
                f.stat.scale,
                f.stat.age,
            )


CATALOG: tuple[MetricSpec, ...] = (
    *_derived(),
    MetricSpec(
        "streamjoin_plan_changes",
        "counter",
        ("query",),
        "query",
        "plan.plan_changes",
        "Times the chosen join order changed.",
    ),
    MetricSpec(
        "streamjoin_plan_estimated_cost",
        "gauge",
        ("query",),
        "query",
        "plan.estimated_cost",
        "The cost model's estimate for the chosen plan.",
    ),
    MetricSpec(
        "streamjoin_plan_info",
        "gauge",
        ("query", "global_order"),
        "query",
        "plan.global_order",
        "Always 1; global_order: the chosen global join order, stream names joined by commas.",
    ),
    MetricSpec(
        "streamjoin_query_paused",
        "gauge",
        ("query",),
        "query",
        "query.controls.paused",
        "1 if the query is paused.",
    ),
    MetricSpec(
        "streamjoin_query_revision",
        "gauge",
        ("query",),
        "query",
        "query.revision",
        "The definition's revision.",
    ),
    MetricSpec(
        "streamjoin_queries", "gauge", ("status",), "system", "status", "Registered queries by status."
    ),
    MetricSpec("streamjoin_streams", "gauge", (), "system", "stream_count", "Registered streams."),
    MetricSpec("streamjoin_registry_version", "gauge", (), "system", "version", "The registry version."),
    MetricSpec(
        "streamjoin_workers", "gauge", (), "system", "worker_count", "Joiner workers with a live heartbeat."
    ),
    MetricSpec(
        "streamjoin_registry_log_refused",
        "counter",
        ("reason",),
        "process",
        "refused",
        "Registry log records this control plane's restores refused, by reason.",
    ),
)
"""Every metric `/metrics` exports (counters get `_total`, histograms `_bucket`/`_sum`/`_count`)."""


def _family(spec: MetricSpec) -> Metric:
    if spec.kind == "counter":
        return CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
    if spec.kind == "histogram":
        return HistogramMetricFamily(spec.name, spec.help, labels=spec.labels)
    return GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)


class ObservationCollector(Collector):
    """Export one `Observation` as the metrics of `CATALOG`."""

    def __init__(self, observation: Observation, refused: Mapping[RefusalReason, int] | None = None) -> None:
        """Collect from `observation` (read from Redis for this scrape); `refused`: the log records this
        process's restores refused, by reason (`RegistryGuard.refused`)."""
        self._observation = observation
        self._refused = dict(refused or {})

    def collect(self) -> Iterator[Metric]:
        """Yield one family per catalog entry, with a sample per entity that published the field."""
        for spec in CATALOG:
            family = _family(spec)
            if spec.source == "process":
                for reason in REFUSAL_REASONS:
                    _add(family, [reason], float(self._refused.get(reason, 0)))
            elif spec.source == "system":
                self._system(spec, family)
            else:
                for qo in self._observation.queries.values():
                    self._query(spec, family, qo)
            yield family

    def _system(self, spec: MetricSpec, family: Metric) -> None:
        obs = self._observation
        if spec.field == "status":
            counts = dict.fromkeys(QUERY_STATUSES, 0)
            for qo in obs.queries.values():
                counts[qo.status] += 1
            for status, n in counts.items():
                _add(family, [status], n)
        else:
            _add(family, [], number(attrgetter(spec.field)(obs)))

    def _query(self, spec: MetricSpec, family: Metric, qo: QueryObservation) -> None:
        q = qo.query
        if spec.source == "query":
            if spec.field.startswith("plan.") and qo.plan is None:
                return
            value = attrgetter(spec.field)(qo)
            if spec.field == "plan.global_order":  # an info metric: the value is in a label
                if value:
                    _add(family, [q.name, ",".join(value)], 1.0)
            else:
                _add(family, [q.name], number(float(value) if isinstance(value, bool) else value))
            return
        windows: Mapping[str, str] = {i.stream: window_label(i.window) for i in q.query.inputs}
        for stats in qo.stats:
            partition = str(stats.partition)
            if spec.source == "operator":
                self._operator(spec, family, [q.name, partition], getattr(stats.operator, spec.field))
                continue
            per_stream = getattr(stats.operator, spec.field) if spec.source == "operator_by_stream" else None
            for stream, window in windows.items():
                if spec.source == "window":
                    published = stats.streams.get(stream)
                    sample = number(getattr(published, spec.field)) if published is not None else None
                else:
                    sample = number(per_stream.get(stream)) if isinstance(per_stream, Mapping) else None
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
        if value is not None and spec.age:
            value = max(self._observation.at - value, 0.0)
        _add(family, labels, value * spec.scale if value is not None else None)


def _add(family: Metric, labels: list[str], value: float | None) -> None:
    if value is not None and isinstance(family, CounterMetricFamily | GaugeMetricFamily):
        family.add_metric(labels, value)


def render_metrics(observation: Observation, refused: Mapping[RefusalReason, int] | None = None) -> bytes:
    """Return the Prometheus text exposition of `observation` and this process's `refused` counts."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ObservationCollector(observation, refused))
    return generate_latest(registry)
