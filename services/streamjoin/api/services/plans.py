"""Show the plan the joiners chose for a query; ask them to re-plan."""

from __future__ import annotations

from streamjoin.api.schemas import PlanPublic, ReplanPublic
from streamjoin.api.services.observe import observe_query, total
from streamjoin.query.bounds import bounds_report
from streamjoin.registry import NotFoundError, RegistryStore

__all__ = ["PlanService"]


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
        plan = qo.plan
        order = record.controls.order
        return PlanPublic(
            query=name,
            planned=plan is not None,
            requested_order=order if order == "auto" else list(order),
            global_order=list(plan.global_order) if plan else None,
            local_orders={s: list(o) for s, o in plan.local_orders.items()} if plan else None,
            estimated_cost=plan.estimated_cost if plan else None,
            observed_cost=total(p.operator.observed_cost for p in qo.stats),
            reason=plan.reason if plan else None,
            changed_at=plan.changed_at if plan else None,
            plan_changes=plan.plan_changes if plan else 0,
            statistics={s: dict(v) for s, v in plan.statistics.items()} if plan else {},
            replan_pending=qo.replan_pending,
            bounds=bounds_report(record.effective()),
        )

    async def replan(self, name: str) -> ReplanPublic:
        """Ask the joiners to re-plan the query now; raise `NotFoundError`."""
        request_id = await self._store.request_replan(name)
        return ReplanPublic(query=name, request_id=request_id, registry_version=await self._store.version())
