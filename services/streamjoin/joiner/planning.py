"""The worker's side of planning: one `OperatorFactory` per query, re-planned from every partition.

The operators of a query on this worker share its factory's `QueryPlanner`. Every
`replan_interval_ms` the worker merges their statistics (rates summed, distinct join keys united,
observed whatever the algorithm), lets the planner decide, installs a new plan in each operator
between batches, and publishes plans and the statistics they were chosen from to the registry.
"""

from __future__ import annotations

from collections.abc import Iterable

from streamjoin.joiner.operator import PartitionOperator
from streamjoin.operator import OperatorFactory
from streamjoin.query.model import QueryDef
from streamjoin.registry import RegistryStore

__all__ = ["QueryFactories"]


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
            plan = planner.maybe_replan([c for c in collectors if c is not None], force=request is not None)
            if plan is not None:
                for op in running:
                    op.set_plan(plan)
                await registry.write_plan(name, plan, statistics=planner.statistics())
            elif planner.unpublished or request is not None:  # a request shows what it was judged on
                await registry.write_plan(name, planner.plan, statistics=planner.statistics())
            planner.unpublished = False
            if request is not None:
                await registry.clear_replan(name, request)
