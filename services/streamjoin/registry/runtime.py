"""Plans, statistics, status and heartbeats: what joiners write and the control plane reads.

None of these bump the registry version: they describe the running system, not its definition.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from redis.asyncio.client import Pipeline

from streamjoin.engine.plan import JoinPlan
from streamjoin.query.partitioning import PartitioningPlan
from streamjoin.registry._base import StoreBase, Writes, as_fields, text, text_hash, texts
from streamjoin.registry.records import (
    PartitionState,
    PlanRecord,
    StatusRecord,
    WorkerRecord,
    dumps,
)
from streamjoin.registry.stats import OperatorStats, PartitionStats, WindowStats

__all__ = ["OPERATOR_FIELD", "RuntimeOps"]

OPERATOR_FIELD = "operator"
"""The field of `streamjoin:stats:{query}:{partition}` holding the join operator's statistics."""


class RuntimeOps(StoreBase):
    """Runtime state of queries, written by joiners, read by the control plane."""

    # ---- plan ----------------------------------------------------------------------------------

    async def write_plan(
        self,
        query: str,
        plan: JoinPlan,
        *,
        statistics: Mapping[str, Mapping[str, Any]] | None = None,
        at: float | None = None,
    ) -> PlanRecord:
        """Publish the plan chosen for `query`; return what is stored.

        `plan_changes` is incremented (and `changed_at` set) when the orders differ from the stored
        plan; the first plan of a query counts as no change. `statistics` are the per-stream inputs
        of the cost model (e.g. `dataclasses.asdict` of the planner's `StreamStats`).
        """
        key = self._keys.plan(query)
        stamp = time.time() if at is None else at
        stored: list[PlanRecord] = []

        async def prepare(pipe: Pipeline) -> Writes:
            old_fields = text_hash(await pipe.hgetall(key))
            old = PlanRecord.from_hash(old_fields) if old_fields else None
            local = {s: tuple(o) for s, o in plan.local_orders.items()}
            same = old is not None and (old.global_order, dict(old.local_orders)) == (
                tuple(plan.global_order),
                local,
            )
            record = PlanRecord(
                global_order=tuple(plan.global_order),
                local_orders=local,
                estimated_cost=plan.estimated_cost,
                reason=plan.reason,
                changed_at=old.changed_at if same and old is not None else stamp,
                plan_changes=(old.plan_changes + (0 if same else 1)) if old is not None else 0,
                statistics=dict(statistics or {}),
                partitioning=old.partitioning if old is not None else None,  # its own writer's field
            )
            stored.append(record)
            fields = {
                "global_order": dumps(list(record.global_order)),
                "local_orders": dumps({s: list(o) for s, o in record.local_orders.items()}),
                "estimated_cost": dumps(record.estimated_cost),
                "reason": dumps(record.reason),
                "changed_at": dumps(record.changed_at),
                "plan_changes": dumps(record.plan_changes),
                "statistics": dumps(record.statistics),
            }
            return lambda p: p.hset(key, mapping=as_fields(fields))

        await self._atomic([key], prepare, bump=False)
        return stored[-1]

    async def write_partitioning(self, query: str, partitioning: PartitioningPlan) -> None:
        """Publish how `query`'s inputs reach its operator partitions (field `partitioning` of its plan).

        Written by the worker that sets the query up (it knows the topics' partition counts); the
        join orders of `write_plan` are left as they are, and `write_plan` leaves this field.
        """
        await self._redis.hset(self._keys.plan(query), "partitioning", dumps(partitioning.to_json()))

    async def read_plan(self, query: str) -> PlanRecord | None:
        """Return the plan published for `query`, or None if no joiner chose one yet."""
        fields = text_hash(await self._redis.hgetall(self._keys.plan(query)))
        return PlanRecord.from_hash(fields) if fields else None

    # ---- statistics ----------------------------------------------------------------------------

    async def write_stats(
        self,
        query: str,
        partition: int,
        operator: OperatorStats,
        streams: Mapping[str, WindowStats],
    ) -> None:
        """Publish one partition's statistics of `query` (one round trip).

        Args:
            query: the query name.
            partition: the partition number (the same for every co-partitioned input).
            operator: the join operator's statistics; `updated_at` is set to now unless given.
            streams: per input stream, its window's statistics.
        """
        k = self._keys
        if operator.updated_at is None:
            operator = replace(operator, updated_at=round(time.time(), 3))
        fields = {OPERATOR_FIELD: operator.to_json()}
        for name, stats in streams.items():
            if name == OPERATOR_FIELD:
                raise ValueError(f"a stream may not be called {OPERATOR_FIELD!r}")
            fields[name] = stats.to_json()
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(k.stats(query, partition), mapping=as_fields(fields))
            pipe.sadd(k.stats_index(query), str(partition))
            await pipe.execute()

    async def read_stats(self, query: str) -> list[PartitionStats]:
        """Return every partition's statistics of `query`, by partition."""
        k = self._keys
        partitions = sorted(int(p) for p in texts(await self._redis.smembers(k.stats_index(query))))
        if not partitions:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for p in partitions:
                pipe.hgetall(k.stats(query, p))
            hashes = [text_hash(h) for h in await pipe.execute()]
        return [
            PartitionStats.from_hash(p, fields, OPERATOR_FIELD)
            for p, fields in zip(partitions, hashes, strict=True)
            if fields
        ]

    # ---- status --------------------------------------------------------------------------------

    async def set_status(
        self,
        query: str,
        partition: int | None,
        *,
        worker: str,
        state: PartitionState,
        partitions: int | None = None,
        version: int | None = None,
        at: float | None = None,
        error: str | None = None,
        error_since: float | None = None,
    ) -> None:
        """Report where `partition` of `query` stands (`positioning`, `running`, `paused`, `failing`).

        Args:
            partition: the partition, or None for the query as a whole (a problem found before
                any partition could start).
            partitions: how many partitions the query has in all, so readers know when all run.
            version: the registry version the worker has applied.
            error: why it is stuck (with `state="failing"`), and `error_since` since when.
        """
        stamp = time.time() if at is None else at
        record = StatusRecord(partition, worker, state, stamp, partitions, version, error, error_since)
        await self._redis.hset(self._keys.status(query), _status_field(partition), record.to_json())

    async def clear_status(self, query: str, partition: int | None) -> None:
        """Forget `partition` of `query` (its worker lost it in a rebalance; None: the query's own)."""
        await self._redis.hdel(self._keys.status(query), _status_field(partition))

    async def read_status(self, query: str) -> list[StatusRecord]:
        """Return the status of every partition of `query` reported so far, by partition.

        The query's own status (partition None), if any, comes first.
        """
        fields = text_hash(await self._redis.hgetall(self._keys.status(query)))
        records = (StatusRecord.from_json(_status_partition(p), v) for p, v in fields.items())
        return sorted(records, key=_by_partition)

    # ---- workers -------------------------------------------------------------------------------

    async def heartbeat(
        self,
        worker: str,
        *,
        pid: int,
        partitions: Mapping[str, Sequence[int]],
        started_at: float,
        ttl_ms: int = 10_000,
    ) -> None:
        """Announce that `worker` is alive for `ttl_ms`, with the partitions it owns per query."""
        now = time.time()
        value = dumps(
            {
                "pid": pid,
                "partitions": {q: sorted(ps) for q, ps in partitions.items()},
                "started_at": started_at,
                "seen_at": now,
            }
        )
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._keys.worker(worker), value, px=ttl_ms)
            pipe.zadd(self._keys.workers, {worker: int(now * 1000) + ttl_ms})
            await pipe.execute()

    async def remove_worker(self, worker: str) -> None:
        """Withdraw `worker`'s heartbeat (on a clean shutdown)."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._keys.worker(worker))
            pipe.zrem(self._keys.workers, worker)
            await pipe.execute()

    async def workers(self) -> list[WorkerRecord]:
        """Return the workers whose heartbeat has not expired, by id."""
        k = self._keys
        await self._redis.zremrangebyscore(k.workers, "-inf", int(time.time() * 1000))
        names = sorted(texts(await self._redis.zrange(k.workers, 0, -1)))
        if not names:
            return []
        values = await self._redis.mget([k.worker(n) for n in names])
        out = []
        for name, raw in zip(names, values, strict=True):
            if raw is None:
                continue
            v = json.loads(text(raw))
            out.append(
                WorkerRecord(
                    worker=name,
                    pid=int(v["pid"]),
                    partitions={q: tuple(ps) for q, ps in v.get("partitions", {}).items()},
                    started_at=float(v["started_at"]),
                    seen_at=float(v["seen_at"]),
                )
            )
        return out


_QUERY_FIELD = "*"
"""The field of `streamjoin:status:{query}` holding the status of the query as a whole."""


def _status_field(partition: int | None) -> str:
    return _QUERY_FIELD if partition is None else str(partition)


def _status_partition(field: str) -> int | None:
    return None if field == _QUERY_FIELD else int(field)


def _by_partition(status: StatusRecord) -> int:
    return -1 if status.partition is None else status.partition
