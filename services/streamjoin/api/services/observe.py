"""Read everything the joiners published (statistics, plans, status) for every registered query.

An `Observation` is one read of the registry and of the runtime keys; Control Tables and `/metrics`
are both computed from it, so they always agree.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from streamjoin.registry import (
    PartitionStats,
    PlanRecord,
    QueryRecord,
    RegistrySnapshot,
    RegistryStore,
    StatusRecord,
    WorkerRecord,
    query_status,
)
from streamjoin.registry.records import QueryStatus

__all__ = ["Observation", "QueryObservation", "StatusReason", "number", "observe", "status_reason", "total"]


@dataclass(frozen=True, slots=True)
class StatusReason:
    """Why a query is not running: the error, since when (unix s), and which partition (None: all)."""

    error: str
    since: float | None
    partition: int | None


def status_reason(statuses: Sequence[StatusRecord]) -> StatusReason | None:
    """Return why a query is stuck: the oldest error a worker reported, else partitions nobody runs.

    >>> ok = StatusRecord(0, "w1", "running", 5.0, partitions=3)
    >>> status_reason([ok])
    StatusReason(error='no worker runs partition(s) [1, 2]', since=None, partition=1)
    >>> stuck = StatusRecord(None, "w1", "failing", 9.0, error="topic b missing", error_since=7.0)
    >>> status_reason([ok, stuck])
    StatusReason(error='topic b missing', since=7.0, partition=None)
    """
    failing = [s for s in statuses if s.error is not None]
    if failing:
        first = min(failing, key=lambda s: s.error_since if s.error_since is not None else s.at)
        return StatusReason(first.error or "", first.error_since, first.partition)
    expected = max((s.partitions or 0 for s in statuses), default=0)
    missing = sorted(set(range(expected)) - {s.partition for s in statuses})
    if missing:
        return StatusReason(f"no worker runs partition(s) {missing}", None, missing[0])
    return None


@dataclass(frozen=True, slots=True)
class QueryObservation:
    """One query with its plan, statistics and status as published."""

    query: QueryRecord
    plan: PlanRecord | None
    stats: tuple[PartitionStats, ...]
    statuses: tuple[StatusRecord, ...]
    replan_pending: str | None

    @property
    def status(self) -> QueryStatus:
        """Return the query's status (registry.query_status)."""
        return query_status(self.query.controls, self.statuses)

    @property
    def reason(self) -> StatusReason | None:
        """Return why the query is not running (None while it runs or is paused)."""
        return None if self.status in ("running", "paused") else status_reason(self.statuses)


@dataclass(frozen=True, slots=True)
class Observation:
    """The registry and the runtime state of every query, read at `at` (unix seconds)."""

    registry: RegistrySnapshot
    queries: Mapping[str, QueryObservation]
    workers: tuple[WorkerRecord, ...]
    at: float

    @property
    def version(self) -> int:
        """Return the registry version read."""
        return self.registry.version

    @property
    def stream_count(self) -> int:
        """Return how many streams are registered."""
        return len(self.registry.streams)

    @property
    def worker_count(self) -> int:
        """Return how many joiner workers have a live heartbeat."""
        return len(self.workers)


async def observe_query(store: RegistryStore, query: QueryRecord) -> QueryObservation:
    """Read one query's plan, statistics, status and pending re-plan request."""
    return QueryObservation(
        query=query,
        plan=await store.read_plan(query.name),
        stats=tuple(await store.read_stats(query.name)),
        statuses=tuple(await store.read_status(query.name)),
        replan_pending=await store.pending_replan(query.name),
    )


async def observe(store: RegistryStore) -> Observation:
    """Read the registry and the runtime state of every registered query."""
    snapshot = await store.snapshot()
    queries = {name: await observe_query(store, q) for name, q in snapshot.queries.items()}
    return Observation(snapshot, queries, tuple(await store.workers()), time.time())


def number(value: object) -> float | None:
    """Return `value` as a finite float, or None if it is not a number (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def total(values: Iterable[object]) -> float | None:
    """Return the sum of the numeric values, or None if there is none."""
    nums = [n for n in map(number, values) if n is not None]
    return sum(nums) if nums else None
