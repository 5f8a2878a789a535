"""Show the plan the joiners chose for a query; ask them to re-plan."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streamjoin.api.schemas import PlanPublic, ReplanPublic
from streamjoin.api.services.observe import number, observe_query, total
from streamjoin.query.bounds import bounds_report
from streamjoin.registry import NotFoundError, PartitionStats, PlanRecord, RegistryStore

__all__ = ["PlanService", "partitioning_json"]


def partitioning_json(plan: PlanRecord | None) -> dict[str, Any] | None:
    """Return the partitioning a joiner published with `plan` in its JSON form, None if none yet."""
    return None if plan is None or plan.partitioning is None else plan.partitioning.to_json()


class PlanService:
    """Plans over the registry."""

    def __init__(self, store: RegistryStore) -> None:
        """Serve plans from `store`."""
        self._store = store

    async def get(self, name: str) -> PlanPublic:
        """Return the query's plan (or `planned: false`); raise `NotFoundError`."""
        record = await self._store.get_query(name)
        if record is None:
            raise NotFoundError("query", name)
        qo = await observe_query(self._store, record)
        published = qo.plan
        plan = published if published is not None and published.planned else None
        order = record.controls.order
        return PlanPublic(
            query=name,
            planned=plan is not None,
            requested_order=order if order == "auto" else list(order),
            global_order=list(plan.global_order) if plan else None,
            local_orders={s: list(o) for s, o in plan.local_orders.items()} if plan else None,
            estimated_cost=plan.estimated_cost if plan else None,
            observed_cost=total(p.operator.observed_cost for p in qo.stats),
            estimated_cost_per_record=_estimated_per_record(plan),
            observed_cost_per_record=_observed_per_record(qo.stats),
            reason=plan.reason if plan else None,
            changed_at=plan.changed_at if plan else None,
            plan_changes=plan.plan_changes if plan else 0,
            statistics={s: dict(v) for s, v in plan.statistics.items()} if plan else {},
            replan_pending=qo.replan_pending,
            bounds=bounds_report(record.effective()),
            partitioning=partitioning_json(published),
        )

    async def replan(self, name: str) -> ReplanPublic:
        """Ask the joiners to re-plan the query now; raise `NotFoundError`."""
        request_id = await self._store.request_replan(name)
        return ReplanPublic(query=name, request_id=request_id, registry_version=await self._store.version())


def _estimated_per_record(plan: PlanRecord | None) -> float | None:
    """Return the estimate per input record: comparisons per time unit over records per time unit.

    >>> rates = {"a": {"rate": 3}, "b": {"rate": 1}}
    >>> _estimated_per_record(PlanRecord(("a", "b"), {}, 40.0, statistics=rates))
    10.0
    """
    if plan is None or plan.estimated_cost is None:
        return None
    rate = total(v.get("rate") for v in plan.statistics.values())
    return plan.estimated_cost / rate if rate else None


def _observed_per_record(stats: Iterable[PartitionStats]) -> float | None:
    """Return probes + comparisons per input record over all partitions (ratios weighted by records)."""
    work = records = 0.0
    for p in stats:
        ratio, count = number(p.operator.observed_cost), number(p.operator.records_in)
        if ratio is not None and count:
            work += ratio * count
            records += count
    return work / records if records else None
