"""`OperatorFactory`: the one place a query's operator is built, for the joiner, replay and the back-fill.

An operator is an engine (`MultiJoin`), the statistics collector its records go through, and the
query's `QueryPlanner`, shared by every operator the factory builds: an operator starts with the
planner's current plan, and a re-plan (by an operator itself, or by the host over several) changes
the plan of the next ones too. Hosts differ only in the arguments:

- replay: `OperatorFactory(query).build()`: one operator, re-planning itself every 2,048 records;
- the back-fill: one factory per Spark task, `build(partition)` per group, re-planning the same way;
- the joiner: one factory per query and worker with `replan_every=None`, `build(partition,
  journal=True)` per attempt; the worker re-plans on a timer from all its partitions' statistics.

Statistics are collected when someone reads them: for `order: "auto"`, and for a written order
when the host plans (the joiner estimates its cost for the Control Tables).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streamjoin.engine import MultiJoin
from streamjoin.operator.join import JoinOperator
from streamjoin.operator.planning import QueryPlanner
from streamjoin.planner.collector import StatsCollector
from streamjoin.query import QueryDef

__all__ = ["REPLAN_EVERY", "OperatorFactory"]

REPLAN_EVERY = 2048
"""Records between an operator's own re-plan checks (a check compares rates: cheap)."""


class OperatorFactory:
    """Build the operators of one query, all sharing its `QueryPlanner`."""

    def __init__(
        self, query: QueryDef, *, planner: QueryPlanner | None = None, replan_every: int | None = REPLAN_EVERY
    ) -> None:
        """Build operators of `query`.

        Args:
            query: the query.
            planner: the plan holder to share (default: a new one).
            replan_every: records between an operator's own re-plan checks; None when the host
                re-plans (over several operators). Written orders never re-plan on their own.
        """
        if replan_every is not None and replan_every < 1:
            raise ValueError("replan_every must be >= 1 (or None)")
        self.query = query
        self.planner = planner or QueryPlanner(query)
        auto = query.order == "auto"
        self._replan_every = replan_every if auto else None
        self._observe = auto or replan_every is None

    def build(
        self,
        partition: int | None = None,
        *,
        sources: Mapping[str, Iterable[int]] | None = None,
        **engine_options: Any,
    ) -> JoinOperator:
        """Return a new operator running the planner's current plan.

        Args:
            partition: the one partition of every input it reads (default: partition 0 of each).
            sources: inputs read with other partitions than `partition` (a re-keyed input: every
                source partition of its topic), which each hold the watermark.
            engine_options: more `MultiJoin` options (`journal`, `store_factory`, `buckets`).
        """
        partitions = None if partition is None else {s: [partition] for s in self.query.stream_names}
        if sources:
            partitions = {**(partitions or {}), **{s: list(ps) for s, ps in sources.items()}}
        engine = MultiJoin(self.query, self.planner.plan, partitions=partitions, **engine_options)
        collector = StatsCollector(self.query) if self._observe else None
        return JoinOperator(
            self.query, engine, self.planner, collector=collector, replan_every=self._replan_every
        )
