"""The worker's side of planning: one `OperatorFactory` per query, re-planned from every partition.

The operators of a query on this worker share its factory's `QueryPlanner`. Every
`replan_interval_ms` the worker merges their statistics (rates summed, distinct join keys united,
observed whatever the algorithm), lets the planner decide, installs a new plan in each operator
between batches, and publishes plans and the statistics they were chosen from to the registry.
The statistics are read on the event loop (the operators write them there); the search runs on a
thread (`asyncio.to_thread`), bounded by the planner's time limit, so a query with many inputs
never stalls the loop and the other queries' batches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from streamjoin.engine import JoinPlan
from streamjoin.joiner.operators.operator import PartitionOperator
from streamjoin.operator import OperatorFactory, QueryPlanner
from streamjoin.planner.collector import StatsCollector
from streamjoin.query.model import QueryDef
from streamjoin.registry import RegistryStore

__all__ = ["QueryFactories", "replan_off_loop"]


class QueryFactories:
    """The operator factory of each query a worker runs."""

    def __init__(self) -> None:
        self._factories: dict[str, OperatorFactory] = {}

    def factory(self, query: QueryDef) -> OperatorFactory:
        """Return the factory of `query`: a new one (and planner) if its definition changed."""
        factory = self._factories.get(query.name)
        if factory is None or factory.query != query:
            factory = self._factories[query.name] = OperatorFactory(query, replan_every=None)
        return factory

    def drop(self, name: str) -> None:
        """Forget query `name` (deleted)."""
        self._factories.pop(name, None)

    async def replan(self, registry: RegistryStore, ops: Iterable[tuple[str, PartitionOperator]]) -> None:
        """Re-plan each query from its operators in `ops` (query name, operator); publish the plans."""
        by_query: dict[str, list[PartitionOperator]] = {}
        for name, op in ops:
            by_query.setdefault(name, []).append(op)
        for name, factory in list(self._factories.items()):
            planner = factory.planner
            running = by_query.get(name, [])
            collectors = [op.operator.collector for op in running if op.operator is not None]
            request = await registry.pending_replan(name)
            plan = await replan_off_loop(
                planner, [c for c in collectors if c is not None], force=request is not None
            )
            if plan is not None:
                for op in running:
                    op.set_plan(plan)
                await registry.write_plan(name, plan, statistics=planner.statistics())
            elif planner.unpublished or request is not None:  # a request shows what it was judged on
                await registry.write_plan(name, planner.plan, statistics=planner.statistics())
            planner.unpublished = False
            if request is not None:
                await registry.clear_replan(name, request)


async def replan_off_loop(
    planner: QueryPlanner, collectors: Iterable[StatsCollector], *, force: bool = False
) -> JoinPlan | None:
    """Return a new plan for `planner`'s query, or None; the search runs on a worker thread.

    The statistics are read here, on the loop that writes them; only the pure, time-bounded search
    leaves it.
    """
    stats = planner.prepare(collectors, force=force)
    return None if stats is None else await asyncio.to_thread(planner.decide, stats)
