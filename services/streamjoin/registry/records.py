"""The values stored in the registry, as typed, immutable records with their JSON form.

Each record knows how to turn itself into the JSON that docs/registry.md specifies and back, so the
store only moves strings. `from_json` trusts what the registry holds (the control plane validated it
before writing) but still checks types, so a corrupt value fails loudly instead of propagating.

>>> c = Controls.from_definition({"order": ["a", "b"], "evaluation": {"mode": "lazy", "every": 10}})
>>> c.order, c.evaluation["mode"], c.paused
(('a', 'b'), 'lazy', False)
>>> Controls.from_hash(c.to_hash()) == c
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias, cast

from streamjoin.engine.plan import JoinPlan

__all__ = [
    "CONTROL_ATTRIBUTES",
    "Controls",
    "PartitionStats",
    "PartitionState",
    "PlanRecord",
    "QueryRecord",
    "QueryStatus",
    "RegistrySnapshot",
    "StatusRecord",
    "StreamRecord",
    "WorkerRecord",
    "dumps",
    "query_status",
]

PartitionState: TypeAlias = Literal["positioning", "running", "paused"]
QueryStatus: TypeAlias = Literal["pending", "positioning", "running", "paused"]
Order: TypeAlias = Literal["auto"] | tuple[str, ...]

CONTROL_ATTRIBUTES: tuple[str, ...] = (
    "evaluation",
    "expiration",
    "order",
    "paused",
    "memory_budget_bytes",
)
"""The writable Control-Table attributes of a query, the fields of `streamjoin:control:{query}`."""

_EAGER: Mapping[str, Any] = {"mode": "eager"}


def dumps(value: object) -> str:
    """Return `value` as compact, strict JSON (no NaN or infinity)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False, sort_keys=True)


def _object(raw: str | bytes, what: str) -> dict[str, Any]:
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


def _order(value: object) -> Order:
    if value is None or value == "auto":
        return "auto"
    if isinstance(value, list | tuple) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise ValueError(f"order must be 'auto' or a list of stream names, not {value!r}")


@dataclass(frozen=True, slots=True)
class StreamRecord:
    """A registered stream: a topic of JSON records with their timestamp field and optional schema."""

    name: str
    topic: str
    timestamp: str | None
    schema: Mapping[str, Any] | None = None
    description: str = ""
    created_at: float = 0.0

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
            }
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
        )


@dataclass(frozen=True, slots=True)
class Controls:
    """The writable Control-Table attributes of one query (STREAM's CT controls)."""

    evaluation: Mapping[str, Any] = field(default_factory=lambda: dict(_EAGER))
    expiration: Mapping[str, Any] = field(default_factory=lambda: dict(_EAGER))
    order: Order = "auto"
    paused: bool = False
    memory_budget_bytes: int | None = None

    @classmethod
    def from_definition(cls, definition: Mapping[str, Any], *, paused: bool = False) -> Controls:
        """Return the controls a newly registered query starts with: its own modes and order."""
        return cls(
            evaluation=dict(definition.get("evaluation") or _EAGER),
            expiration=dict(definition.get("expiration") or _EAGER),
            order=_order(definition.get("order")),
            paused=paused,
        )

    def to_hash(self) -> dict[str, str]:
        """Return the fields of `streamjoin:control:{query}`, attribute to JSON."""
        return {
            "evaluation": dumps(dict(self.evaluation)),
            "expiration": dumps(dict(self.expiration)),
            "order": dumps(self.order if self.order == "auto" else list(self.order)),
            "paused": dumps(self.paused),
            "memory_budget_bytes": dumps(self.memory_budget_bytes),
        }

    @classmethod
    def from_hash(cls, fields: Mapping[str, str]) -> Controls:
        """Build the controls from the stored hash; a missing attribute takes its default."""
        v = {k: json.loads(fields[k]) for k in CONTROL_ATTRIBUTES if k in fields}
        budget = v.get("memory_budget_bytes")
        return cls(
            evaluation=dict(v.get("evaluation") or _EAGER),
            expiration=dict(v.get("expiration") or _EAGER),
            order=_order(v.get("order")),
            paused=bool(v.get("paused", False)),
            memory_budget_bytes=int(budget) if budget is not None else None,
        )

    def with_changes(self, changes: Mapping[str, Any]) -> Controls:
        """Return a copy with `changes` (attribute to JSON value) applied."""
        unknown = set(changes) - set(CONTROL_ATTRIBUTES)
        if unknown:
            raise ValueError(f"not writable control attribute(s): {sorted(unknown)}")
        updates: dict[str, Any] = dict(changes)
        if "order" in updates:
            updates["order"] = _order(updates["order"])
        return replace(self, **updates)

    def as_json(self) -> dict[str, Any]:
        """Return the controls as one JSON object."""
        return {k: json.loads(v) for k, v in self.to_hash().items()}


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """A registered query: its normalised definition, the CQL it came from, and its controls."""

    name: str
    definition: Mapping[str, Any]
    cql: str | None
    controls: Controls
    created_at: float
    updated_at: float
    revision: int = 1

    def to_json(self) -> str:
        """Return the JSON stored in `streamjoin:queries` (the controls live in their own hash)."""
        return dumps(
            {
                "definition": dict(self.definition),
                "cql": self.cql,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "revision": self.revision,
            }
        )

    @classmethod
    def from_json(cls, name: str, raw: str | bytes, controls: Controls) -> QueryRecord:
        """Build the record from its stored JSON and its control hash."""
        v = _object(raw, f"query {name}")
        created = float(v.get("created_at") or 0.0)
        return cls(
            name=name,
            definition=cast(Mapping[str, Any], v["definition"]),
            cql=v.get("cql"),
            controls=controls,
            created_at=created,
            updated_at=float(v.get("updated_at") or created),
            revision=int(v.get("revision") or 1),
        )

    @property
    def streams(self) -> tuple[str, ...]:
        """Return the names of the streams the query reads."""
        return tuple(str(i["stream"]) for i in self.definition.get("inputs", ()))

    def effective_definition(self) -> dict[str, Any]:
        """Return the definition with the controls' evaluation, expiration and order applied.

        This is what a joiner runs (feed it to `streamjoin.query.parse_query`); `paused` and
        `memory_budget_bytes` are read from `controls` directly.
        """
        effective = dict(self.definition)
        effective["evaluation"] = dict(self.controls.evaluation)
        effective["expiration"] = dict(self.controls.expiration)
        order = self.controls.order
        effective["order"] = order if order == "auto" else list(order)
        return effective


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
        )

    def to_join_plan(self) -> JoinPlan:
        """Return the engine's `JoinPlan`."""
        return JoinPlan(self.global_order, dict(self.local_orders), self.estimated_cost, self.reason)


@dataclass(frozen=True, slots=True)
class StatusRecord:
    """Where one input partition of a query stands, as its worker reported."""

    partition: int
    worker: str
    state: PartitionState
    at: float
    partitions: int | None = None
    """How many partitions the query has in all (the joiner knows from the topic metadata)."""
    version: int | None = None
    """The registry version the worker had applied when it wrote this status."""

    def to_json(self) -> str:
        """Return the JSON stored in `streamjoin:status:{query}`."""
        return dumps(
            {
                "worker": self.worker,
                "state": self.state,
                "at": self.at,
                "partitions": self.partitions,
                "version": self.version,
            }
        )

    @classmethod
    def from_json(cls, partition: int, raw: str | bytes) -> StatusRecord:
        """Build the record from its stored JSON."""
        v = _object(raw, f"status of partition {partition}")
        state = v.get("state")
        if state not in ("positioning", "running", "paused"):
            raise ValueError(f"unknown partition state {state!r}")
        total = v.get("partitions")
        version = v.get("version")
        return cls(
            partition=partition,
            worker=str(v.get("worker") or ""),
            state=state,
            at=float(v.get("at") or 0.0),
            partitions=int(total) if total is not None else None,
            version=int(version) if version is not None else None,
        )


def query_status(controls: Controls, statuses: Sequence[StatusRecord]) -> QueryStatus:
    """Return a query's status: paused, else running once every partition runs, else pending/positioning.

    >>> s = StatusRecord(0, "w1", "running", 0.0, partitions=2)
    >>> query_status(Controls(), [s]), query_status(Controls(), [s, replace(s, partition=1)])
    ('positioning', 'running')
    """
    if controls.paused:
        return "paused"
    if not statuses:
        return "pending"
    expected = max((s.partitions or 0 for s in statuses), default=0)
    running = {s.partition for s in statuses if s.state == "running"}
    if len(running) == len(statuses) and len(running) >= expected:
        return "running"
    return "positioning"


@dataclass(frozen=True, slots=True)
class PartitionStats:
    """One partition's statistics of a query: the operator's counters and one entry per stream.

    The field names the control plane reads are listed in docs/registry.md ("Statistics").
    """

    partition: int
    operator: Mapping[str, Any]
    streams: Mapping[str, Mapping[str, Any]]


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
