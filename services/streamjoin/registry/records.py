"""The values stored in the registry, as typed, immutable records with their JSON form.

Each record knows how to turn itself into the JSON that docs/registry.md specifies and back, so the
store only moves strings. `from_json` trusts what the registry holds (the control plane validated it
before writing) but still checks types, so a corrupt value fails loudly instead of propagating. A
registered query and its controls are in `streamjoin.registry.query`, the statistics joiners publish
in `streamjoin.registry.stats`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from streamjoin.engine.plan import JoinPlan
from streamjoin.query.grammar import INPUT_FORMATS, InputFormat, one_of
from streamjoin.query.partitioning import PartitioningPlan
from streamjoin.registry._json import dumps
from streamjoin.registry._json import json_object as _object
from streamjoin.registry.query import QueryControls, QueryRecord

__all__ = [
    "PartitionState",
    "PlanRecord",
    "QUERY_STATUSES",
    "QueryStatus",
    "RegistrySnapshot",
    "StatusRecord",
    "StreamRecord",
    "WorkerRecord",
    "dumps",
    "query_status",
]

PartitionState: TypeAlias = Literal["positioning", "running", "paused", "failing"]
QueryStatus: TypeAlias = Literal["pending", "positioning", "running", "paused", "failing"]
QUERY_STATUSES: tuple[QueryStatus, ...] = ("pending", "positioning", "running", "paused", "failing")
"""Every `QueryStatus`, in the order metrics list them."""


@dataclass(frozen=True, slots=True)
class StreamRecord:
    """A registered stream: a topic of JSON records with their timestamp field and optional schema."""

    name: str
    topic: str
    timestamp: str | None
    schema: Mapping[str, Any] | None = None
    description: str = ""
    created_at: float = 0.0
    expected_rate: float | None = None
    """Records per second the producer expects (state-size estimate at registration); None: unknown."""
    record_bytes: int | None = None
    """Expected size of one record in bytes (state-size estimate); None: unknown."""
    key: str | None = None
    """The field the topic is partitioned by (docs/partitioning.md); None: not keyed or unknown."""
    format: InputFormat = "json"
    """How record values are encoded; `avro`: Confluent wire format, `schema` an Avro record schema."""

    def to_json(self) -> str:
        """Return the JSON stored in `streamjoin:streams`."""
        return dumps(
            {
                "name": self.name,
                "topic": self.topic,
                "timestamp": self.timestamp,
                "schema": self.schema,
                "description": self.description,
                "created_at": self.created_at,
                "expected_rate": self.expected_rate,
                "record_bytes": self.record_bytes,
                "key": self.key,
            }
            | ({"format": self.format} if self.format != "json" else {})
        )

    @classmethod
    def from_json(cls, raw: str | bytes) -> StreamRecord:
        """Build the record from its stored JSON."""
        v = _object(raw, "stream")
        return cls(
            name=str(v["name"]),
            topic=str(v["topic"]),
            timestamp=v.get("timestamp"),
            schema=v.get("schema"),
            description=str(v.get("description") or ""),
            created_at=float(v.get("created_at") or 0.0),
            expected_rate=None if v.get("expected_rate") is None else float(v["expected_rate"]),
            record_bytes=None if v.get("record_bytes") is None else int(v["record_bytes"]),
            key=None if v.get("key") is None else str(v["key"]),
            format=_input_format(v.get("format", "json")),
        )


def _input_format(value: object) -> InputFormat:
    """Return `value` as a stream's format; raise `ValueError` if the grammar declares no such format."""
    if value not in INPUT_FORMATS:
        raise ValueError(f"stream: format must be {one_of(INPUT_FORMATS)}, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class PlanRecord:
    """The plan a joiner chose for a query, with the statistics it was chosen from."""

    global_order: tuple[str, ...]
    local_orders: Mapping[str, tuple[str, ...]]
    estimated_cost: float | None = None
    reason: str = ""
    changed_at: float | None = None
    plan_changes: int = 0
    statistics: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    partitioning: PartitioningPlan | None = None
    """How the inputs reach the operator partitions (read directly or re-keyed), as the joiner
    planned it from the topics' partition counts; None until a joiner published it."""

    @property
    def planned(self) -> bool:
        """Return True once a joiner published join orders (the hash may hold only `partitioning`)."""
        return bool(self.global_order)

    @classmethod
    def from_hash(cls, fields: Mapping[str, str]) -> PlanRecord:
        """Build the record from `streamjoin:plan:{query}`."""
        v = {k: json.loads(s) for k, s in fields.items()}
        cost = v.get("estimated_cost")
        changed = v.get("changed_at")
        return cls(
            global_order=tuple(v.get("global_order") or ()),
            local_orders={k: tuple(o) for k, o in (v.get("local_orders") or {}).items()},
            estimated_cost=float(cost) if cost is not None else None,
            reason=str(v.get("reason") or ""),
            changed_at=float(changed) if changed is not None else None,
            plan_changes=int(v.get("plan_changes") or 0),
            statistics=v.get("statistics") or {},
            partitioning=PartitioningPlan.from_json(v["partitioning"]) if v.get("partitioning") else None,
        )

    def to_join_plan(self) -> JoinPlan:
        """Return the engine's `JoinPlan`."""
        return JoinPlan(self.global_order, dict(self.local_orders), self.estimated_cost, self.reason)


@dataclass(frozen=True, slots=True)
class StatusRecord:
    """Where one input partition of a query stands, as its worker reported.

    `partition` None is the query as a whole: a problem a worker found before any partition could
    start (an input topic missing, inputs not co-partitioned), stored under the field `*`.
    """

    partition: int | None
    worker: str
    state: PartitionState
    at: float
    partitions: int | None = None
    """How many partitions the query has in all (the joiner knows from the topic metadata)."""
    version: int | None = None
    """The registry version the worker had applied when it wrote this status."""
    error: str | None = None
    """Why the partition (or query) is stuck, while it is: `failing`, or `positioning` after its
    worker released it (a rebalance, a shutdown) and before another reports it."""
    error_since: float | None = None
    """When the error was first seen (unix s), kept while the same failure repeats."""

    def to_json(self) -> str:
        """Return the JSON stored in `streamjoin:status:{query}`."""
        return dumps(
            {
                "worker": self.worker,
                "state": self.state,
                "at": self.at,
                "partitions": self.partitions,
                "version": self.version,
                "error": self.error,
                "error_since": self.error_since,
            }
        )

    @classmethod
    def from_json(cls, partition: int | None, raw: str | bytes) -> StatusRecord:
        """Build the record from its stored JSON."""
        v = _object(raw, f"status of partition {partition}")
        state = v.get("state")
        if state not in ("positioning", "running", "paused", "failing"):
            raise ValueError(f"unknown partition state {state!r}")
        total = v.get("partitions")
        version = v.get("version")
        since = v.get("error_since")
        return cls(
            partition=partition,
            worker=str(v.get("worker") or ""),
            state=state,
            at=float(v.get("at") or 0.0),
            partitions=int(total) if total is not None else None,
            version=int(version) if version is not None else None,
            error=str(v["error"]) if v.get("error") is not None else None,
            error_since=float(since) if since is not None else None,
        )


def query_status(controls: QueryControls, statuses: Sequence[StatusRecord]) -> QueryStatus:
    """Return a query's status: paused; failing if a partition (or the query) reports `failing`;
    running once every partition runs; else pending (no report) or positioning.

    >>> from dataclasses import replace
    >>> s = StatusRecord(0, "w1", "running", 0.0, partitions=2)
    >>> query_status(QueryControls(), [s]), query_status(QueryControls(), [s, replace(s, partition=1)])
    ('positioning', 'running')
    >>> query_status(QueryControls(), [s, StatusRecord(None, "w1", "failing", 0.0, error="topic b missing")])
    'failing'
    """
    if controls.paused:
        return "paused"
    if any(s.state == "failing" for s in statuses):
        return "failing"
    statuses = [s for s in statuses if s.partition is not None]
    if not statuses:
        return "pending"
    expected = max((s.partitions or 0 for s in statuses), default=0)
    running = {s.partition for s in statuses if s.state == "running"}
    if len(running) == len(statuses) and len(running) >= expected:
        return "running"
    return "positioning"


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """A live joiner worker, from its heartbeat."""

    worker: str
    pid: int
    partitions: Mapping[str, tuple[int, ...]]
    started_at: float
    seen_at: float


@dataclass(frozen=True, slots=True)
class RegistrySnapshot:
    """Every stream and query (with its controls) as of one registry version, read atomically."""

    version: int
    streams: Mapping[str, StreamRecord]
    queries: Mapping[str, QueryRecord]
    problems: Mapping[str, str] = field(default_factory=dict)
    """Stored queries that could not be read back, by name, with the reason (never expected)."""
    epoch: str | None = None
    """The registry's epoch (`streamjoin:epoch`); None when Redis holds no registry: never written,
    or lost (restarted empty). A reader must not take an epoch-less empty snapshot for "no queries"
    when the registry has a log; a new epoch means Redis was replaced (docs/registry.md)."""
