"""`JoinOperator`: a query's `MultiJoin` plus, for `order: "auto"`, the planning that picks its order.

The engine joins in whatever order it is given; the planner chooses orders from statistics. This
module is the one place that ties them together, so the joiner, `streamjoin replay` and the Spark
back-fill re-plan the same way: every `replan_every` records the observed rates are compared with
those the plan was chosen under, and the `Replanner` decides (2x move by default) whether to switch.
The engine switches between batches, which loses and duplicates nothing (docs/engine.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamjoin.engine import JoinPlan, MultiJoin, Result
from streamjoin.planner import Replanner
from streamjoin.planner.collector import StatsCollector
from streamjoin.query import QueryDef

__all__ = ["JoinOperator"]


class JoinOperator:
    """Run one query: feed records, get results; re-plan as rates move when the order is "auto"."""

    def __init__(self, query: QueryDef, *, replan_every: int = 2048, **engine_options: Any) -> None:
        """Build the engine (`engine_options` go to `MultiJoin`) and, for "auto", the re-planner."""
        self.query = query
        self.engine = MultiJoin(query, **engine_options)
        self._auto = query.order == "auto"
        self.collector = StatsCollector(query) if self._auto else None
        self.replanner = Replanner(query) if self._auto else None
        self._replan_every = replan_every
        self._since_check = 0

    def add(
        self,
        stream: str,
        record: Mapping[str, Any],
        *,
        ts: float,
        partition: int = 0,
        offset: int,
        size: int = 0,
    ) -> bool:
        """Buffer one record (see `MultiJoin.add`); return False when it is late."""
        if self.collector is not None:
            self.collector.observe(stream, record, ts)
            self._since_check += 1
        return self.engine.add(stream, record, ts=ts, partition=partition, offset=offset, size=size)

    def advance(self) -> list[Result]:
        """Re-plan if due, then release and join what the watermark allows."""
        if self._since_check >= self._replan_every:
            self.replan_if_due()
        return self.engine.advance()

    def finish(self) -> list[Result]:
        """End of input: join everything still buffered."""
        return self.engine.finish()

    def request_replan(self) -> None:
        """Re-plan at the next check whatever the rates (the control plane's `POST .../replan`)."""
        if self.replanner is not None:
            self.replanner.request()
            self._since_check = self._replan_every

    def replan_if_due(self) -> JoinPlan | None:
        """Switch the engine to a new plan when the re-planner wants one; return it, or None."""
        self._since_check = 0
        if self.collector is None or self.replanner is None:
            return None
        if not self.replanner.due(self.collector.rates()):
            return None
        plan = self.replanner.observe(self.collector.snapshot())
        if plan is not None:
            self.engine.set_plan(plan)
        return plan

    @property
    def plan(self) -> JoinPlan:
        """Return the plan the engine runs now."""
        return self.engine.plan
