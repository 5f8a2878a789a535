"""Build STREAM's Control Tables from an `Observation`: one per query, window, join operator and topic.

The statistics attributes are derived from the published records (`streamjoin.registry.stats`):
a window's table has every `WindowStats` field, the operator's every `OperatorStats` field, under
the field's own name; the query's table has the totals each field declares (`Stat.summary`).
Partitions (and, for totals, streams) combine as the field declares (`Stat.aggregate`): counters,
sizes, lags and the observed cost add up, the watermark is the minimum, its lag the maximum.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from streamjoin.api.schemas import ControlTable
from streamjoin.api.services.observe import Observation, QueryObservation, number, total
from streamjoin.query.model import RangeWindow, WindowDef
from streamjoin.registry import OperatorStats, WindowStats
from streamjoin.registry.query import writable_controls
from streamjoin.registry.stats import Aggregate, StatField, stat_fields

__all__ = ["operator_table", "query_table", "topic_tables", "window_label", "window_tables"]

_WINDOW = stat_fields(WindowStats)
_OPERATOR = stat_fields(OperatorStats)


def window_label(window: WindowDef | None) -> str:
    """Return a window in CQL spelling, for labels: `RANGE 100`, `ROWS 50`, `PARTITION BY k ROWS 5`.

    `RANGE 100 STRICT` for a strict window; `NONE` for an input bounded by `within` pairs only.

    >>> from streamjoin.query.model import RowsWindow
    >>> window_label(RowsWindow(5, "k"))
    'PARTITION BY k ROWS 5'
    """
    if window is None:
        return "NONE"
    if isinstance(window, RangeWindow):
        return f"RANGE {window.range} STRICT" if window.strict else f"RANGE {window.range}"
    rows = f"ROWS {window.rows}"
    return rows if window.partition_by is None else f"PARTITION BY {window.partition_by} {rows}"


def _min(values: Iterable[object]) -> float | None:
    nums = [n for n in map(number, values) if n is not None]
    return min(nums) if nums else None


def _max(values: Iterable[object]) -> float | None:
    nums = [n for n in map(number, values) if n is not None]
    return max(nums) if nums else None


_COMBINE = {"sum": total, "min": _min, "max": _max}


def _combine(aggregate: Aggregate, values: Iterable[object]) -> float | None:
    return _COMBINE[aggregate](values)


def _window_values(qo: QueryObservation, name: str, streams: Iterable[str]) -> Iterator[object]:
    """Yield field `name` of the given streams' `WindowStats`, over every partition."""
    for p in qo.stats:
        for s in streams:
            window = p.streams.get(s)
            if window is not None:
                yield getattr(window, name)


def _operator_values(qo: QueryObservation, f: StatField, streams: Iterable[str]) -> Iterator[object]:
    """Yield field `f` of the `OperatorStats` over every partition (per-stream maps: of `streams`)."""
    wanted = tuple(streams)
    for p in qo.stats:
        value = getattr(p.operator, f.name)
        if not f.stat.per_stream:
            yield value
        elif isinstance(value, Mapping):
            yield from (value.get(s) for s in wanted)


def _window_total(qo: QueryObservation, name: str, stream: str) -> float | None:
    return total(_window_values(qo, name, (stream,)))


def _operator_total(qo: QueryObservation, name: str) -> float | None:
    return total(getattr(p.operator, name) for p in qo.stats)


def _latency(qo: QueryObservation) -> dict[str, float | None]:
    histograms = [p.operator.latency_seconds for p in qo.stats]
    count = total(h.get("count") for h in histograms if isinstance(h, Mapping))
    seconds = total(h.get("sum") for h in histograms if isinstance(h, Mapping))
    mean = seconds / count if count and seconds is not None else None
    return {"latency_count": count, "latency_seconds_sum": seconds, "latency_mean_seconds": mean}


def query_table(qo: QueryObservation) -> ControlTable:
    """Return the Control Table of a query: its controls, status and the totals its statistics declare."""
    q = qo.query
    streams = q.streams
    reason = qo.reason
    attributes: dict[str, Any] = {
        **q.controls.as_json(),
        "status": qo.status,
        "status_reason": reason.error if reason is not None else None,
        "status_since": reason.since if reason is not None else None,
        "status_partition": reason.partition if reason is not None else None,
        "revision": q.revision,
        "partitions": len(qo.stats),
        "partitions_running": sum(1 for s in qo.statuses if s.state == "running"),
    }
    for f in _WINDOW:
        if f.stat.summary:
            attributes[f.stat.summary] = _combine(f.stat.aggregate, _window_values(qo, f.name, streams))
    for f in _OPERATOR:
        if f.stat.summary:
            attributes[f.stat.summary] = _combine(f.stat.aggregate, _operator_values(qo, f, streams))
    partitioning = qo.plan.partitioning if qo.plan else None
    attributes.update(
        estimated_cost=qo.plan.estimated_cost if qo.plan else None,
        plan_changes=qo.plan.plan_changes if qo.plan else 0,
        operator_partitions=partitioning.partitions if partitioning else None,
        single_partition=partitioning.single_partition if partitioning else None,
        repartitioned=[r.stream for r in partitioning.rekeyed] if partitioning else None,
        **_latency(qo),
    )
    return ControlTable(
        entity="query", name=q.name, attributes=attributes, writable=writable_controls(q.query)
    )


def window_tables(qo: QueryObservation) -> list[ControlTable]:
    """Return the Control Table of each input window of a query, named `query.stream`."""
    tables = []
    spelled = qo.query.definition["inputs"]  # each window in its JSON form
    partitioning = qo.plan.partitioning if qo.plan else None
    routes = {r.stream: r for r in partitioning.routes} if partitioning else {}
    for item, spelling in zip(qo.query.query.inputs, spelled, strict=True):
        stream = item.stream
        route = routes.get(stream)
        attributes: dict[str, Any] = {
            "query": qo.query.name,
            "stream": stream,
            "topic": item.topic,
            "window": spelling.get("window"),  # absent: bounded by `within` pairs only
            "key": item.key,
            "rekeyed": route.rekeyed if route else None,
            "internal_topic": route.internal_topic if route else None,
            "partitioning_reason": route.reason if route else None,
        }
        for f in _WINDOW:
            if f.stat.table:
                attributes[f.name] = _combine(f.stat.aggregate, _window_values(qo, f.name, (stream,)))
        for f in _OPERATOR:
            if f.stat.per_stream and f.stat.table:
                attributes[f.name] = _combine(f.stat.aggregate, _operator_values(qo, f, (stream,)))
        tables.append(
            ControlTable(
                entity="window", name=f"{qo.query.name}.{stream}", attributes=attributes, writable=[]
            )
        )
    return tables


def operator_table(qo: QueryObservation) -> ControlTable:
    """Return the Control Table of a query's multi-way join operator."""
    q, plan = qo.query, qo.plan
    controls = q.controls.as_json()
    attributes: dict[str, Any] = {"algorithm": q.query.algorithm}
    attributes.update((a, controls[a]) for a in ("evaluation", "expiration", "order"))
    for f in _OPERATOR:
        if f.stat.table and not f.stat.per_stream and f.stat.kind != "histogram":
            attributes[f.name] = _combine(f.stat.aggregate, _operator_values(qo, f, ()))
    for f in _WINDOW:
        if f.stat.operator_table:
            attributes[f.name] = _combine(f.stat.aggregate, _window_values(qo, f.name, q.streams))
    attributes.update(
        {
            "global_order": list(plan.global_order) if plan else None,
            "local_orders": {s: list(o) for s, o in plan.local_orders.items()} if plan else None,
            "plan_reason": plan.reason if plan else None,
            "plan_changed_at": plan.changed_at if plan else None,
            "plan_changes": plan.plan_changes if plan else 0,
            "estimated_cost": plan.estimated_cost if plan else None,
            "replan_pending": qo.replan_pending,
            **_latency(qo),
        }
    )
    return ControlTable(entity="operator", name=q.name, attributes=attributes, writable=[])


def topic_tables(observation: Observation) -> list[ControlTable]:
    """Return the Control Table of every topic a stream or query uses."""
    topics: dict[str, dict[str, Any]] = {}

    def entry(topic: str) -> dict[str, Any]:
        return topics.setdefault(
            topic,
            {
                "roles": [],
                "streams": [],
                "queries": [],
                "records_in": {},
                "consumer_lag": {},
                "records_out": {},
            },
        )

    def add(values: list[str], value: str) -> None:
        if value not in values:
            values.append(value)

    lag = next(f for f in _OPERATOR if f.name == "consumer_lag")
    for stream in observation.registry.streams.values():
        add(entry(stream.topic)["roles"], "input")
        add(entry(stream.topic)["streams"], stream.name)
    for name, qo in observation.queries.items():
        query = qo.query.query
        for item in query.inputs:
            t = entry(item.topic)
            add(t["roles"], "input")
            add(t["queries"], name)
            t["records_in"][name] = _window_total(qo, "arrivals", item.stream)
            t["consumer_lag"][name] = total(_operator_values(qo, lag, (item.stream,)))
        t = entry(query.output_topic)
        add(t["roles"], "output")
        add(t["queries"], name)
        t["records_out"][name] = _operator_total(qo, "published")
        if query.dead_letter_topic is not None:
            add(entry(query.dead_letter_topic)["roles"], "dead-letter")
            add(entry(query.dead_letter_topic)["queries"], name)
    return [ControlTable(entity="topic", name=t, attributes=topics[t], writable=[]) for t in sorted(topics)]
