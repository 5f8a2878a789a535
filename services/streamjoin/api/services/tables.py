"""Build STREAM's Control Tables from an `Observation`: one per query, window, join operator and topic.

Statistics are summed over the partitions (counters, sizes, lags, observed cost), except the
watermark (the query's is the minimum over partitions) and its lag (the maximum).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streamjoin.api.schemas import ControlTable
from streamjoin.api.services.observe import Observation, QueryObservation, number, stream_counter, total
from streamjoin.registry import CONTROL_ATTRIBUTES

__all__ = ["operator_table", "query_table", "topic_tables", "window_label", "window_tables"]

WINDOW_COUNTERS = (
    "records",
    "bytes",
    "distinct_keys",
    "arrivals",
    "inserts",
    "expirations",
    "probes",
    "comparisons",
    "results",
    "late",
    "filtered",
    "table_records",
    "table_shared",
)


def window_label(window: Mapping[str, Any]) -> str:
    """Return a window in CQL spelling, for labels: `RANGE 100`, `ROWS 50`, `PARTITION BY k ROWS 5`.

    >>> window_label({"rows": 5, "partition_by": "k"})
    'PARTITION BY k ROWS 5'
    """
    if "range" in window:
        return f"RANGE {window['range']}"
    rows = f"ROWS {window.get('rows')}"
    by = window.get("partition_by")
    return rows if by is None else f"PARTITION BY {by} {rows}"


def _min(values: Iterable[object]) -> float | None:
    nums = [n for n in map(number, values) if n is not None]
    return min(nums) if nums else None


def _max(values: Iterable[object]) -> float | None:
    nums = [n for n in map(number, values) if n is not None]
    return max(nums) if nums else None


def _stream_total(qo: QueryObservation, stream: str, field: str) -> float | None:
    return total(p.streams.get(stream, {}).get(field) for p in qo.stats)


def _operator_total(qo: QueryObservation, field: str) -> float | None:
    return total(p.operator.get(field) for p in qo.stats)


def _per_stream_total(qo: QueryObservation, field: str, stream: str | None = None) -> float | None:
    streams = [stream] if stream is not None else list(qo.query.streams)
    return total(stream_counter(p.operator, field, s) for p in qo.stats for s in streams)


def _latency(qo: QueryObservation) -> dict[str, float | None]:
    histograms = [p.operator.get("latency_seconds") for p in qo.stats]
    count = total(h.get("count") for h in histograms if isinstance(h, Mapping))
    seconds = total(h.get("sum") for h in histograms if isinstance(h, Mapping))
    mean = seconds / count if count and seconds is not None else None
    return {"latency_count": count, "latency_seconds_sum": seconds, "latency_mean_seconds": mean}


def query_table(qo: QueryObservation) -> ControlTable:
    """Return the Control Table of a query: its controls, status and totals."""
    q = qo.query
    streams = q.streams
    attributes: dict[str, Any] = {**q.controls.as_json()}
    attributes.update(
        status=qo.status,
        revision=q.revision,
        partitions=len(qo.stats),
        partitions_running=sum(1 for s in qo.statuses if s.state == "running"),
        records_in=total(_stream_total(qo, s, "arrivals") for s in streams),
        results=_operator_total(qo, "results"),
        records_out=_operator_total(qo, "published"),
        late=total(_stream_total(qo, s, "late") for s in streams),
        malformed=_per_stream_total(qo, "malformed"),
        window_records=total(_stream_total(qo, s, "records") for s in streams),
        memory_bytes=total(_stream_total(qo, s, "bytes") for s in streams),
        watermark=_min(p.operator.get("watermark") for p in qo.stats),
        watermark_lag_ms=_max(p.operator.get("watermark_lag_ms") for p in qo.stats),
        consumer_lag=_per_stream_total(qo, "consumer_lag"),
        estimated_cost=qo.plan.estimated_cost if qo.plan else None,
        observed_cost=_operator_total(qo, "observed_cost"),
        plan_changes=qo.plan.plan_changes if qo.plan else 0,
        **_latency(qo),
    )
    return ControlTable(entity="query", name=q.name, attributes=attributes, writable=list(CONTROL_ATTRIBUTES))


def window_tables(qo: QueryObservation) -> list[ControlTable]:
    """Return the Control Table of each input window of a query, named `query.stream`."""
    tables = []
    for item in qo.query.definition.get("inputs", ()):
        stream = str(item["stream"])
        attributes: dict[str, Any] = {
            "query": qo.query.name,
            "stream": stream,
            "topic": item.get("topic"),
            "window": dict(item.get("window", {})),
            "memory_budget_bytes": qo.query.controls.memory_budget_bytes,
        }
        for field in WINDOW_COUNTERS:
            attributes[field] = _stream_total(qo, stream, field)
        attributes["malformed"] = _per_stream_total(qo, "malformed", stream)
        attributes["consumer_lag"] = _per_stream_total(qo, "consumer_lag", stream)
        tables.append(
            ControlTable(
                entity="window", name=f"{qo.query.name}.{stream}", attributes=attributes, writable=[]
            )
        )
    return tables


def operator_table(qo: QueryObservation) -> ControlTable:
    """Return the Control Table of a query's multi-way join operator."""
    q, plan = qo.query, qo.plan
    streams = q.streams
    attributes: dict[str, Any] = {
        "algorithm": q.definition.get("algorithm", "hash"),
        "evaluation": dict(q.controls.evaluation),
        "expiration": dict(q.controls.expiration),
        "order": q.controls.order if q.controls.order == "auto" else list(q.controls.order),
        "global_order": list(plan.global_order) if plan else None,
        "local_orders": {s: list(o) for s, o in plan.local_orders.items()} if plan else None,
        "plan_reason": plan.reason if plan else None,
        "plan_changed_at": plan.changed_at if plan else None,
        "plan_changes": plan.plan_changes if plan else 0,
        "estimated_cost": plan.estimated_cost if plan else None,
        "observed_cost": _operator_total(qo, "observed_cost"),
        "probes": total(_stream_total(qo, s, "probes") for s in streams),
        "comparisons": total(_stream_total(qo, s, "comparisons") for s in streams),
        "results": _operator_total(qo, "results"),
        "buffered": _operator_total(qo, "buffered"),
        "replan_pending": qo.replan_pending,
        **_latency(qo),
    }
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

    for stream in observation.registry.streams.values():
        add(entry(stream.topic)["roles"], "input")
        add(entry(stream.topic)["streams"], stream.name)
    for name, qo in observation.queries.items():
        for item in qo.query.definition.get("inputs", ()):
            t = entry(str(item["topic"]))
            add(t["roles"], "input")
            add(t["queries"], name)
            t["records_in"][name] = _stream_total(qo, str(item["stream"]), "arrivals")
            t["consumer_lag"][name] = _per_stream_total(qo, "consumer_lag", str(item["stream"]))
        out = qo.query.definition.get("output", {}).get("topic")
        if isinstance(out, str):
            t = entry(out)
            add(t["roles"], "output")
            add(t["queries"], name)
            t["records_out"][name] = _operator_total(qo, "published")
        dead = (qo.query.definition.get("dead_letter") or {}).get("topic")
        if isinstance(dead, str):
            add(entry(dead)["roles"], "dead-letter")
            add(entry(dead)["queries"], name)
    return [ControlTable(entity="topic", name=t, attributes=topics[t], writable=[]) for t in sorted(topics)]
