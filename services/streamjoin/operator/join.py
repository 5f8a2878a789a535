"""`JoinOperator`: a query's engine fed through the statistics that plan it (built by `OperatorFactory`).

Every record goes through `add`, which counts it for the planner (decayed rate, distinct values
of its join fields, whatever the algorithm) and hands it to the engine; a host that reads records
in batches (the joiner) counts each input's records of a batch at once (`observe`) and hands them
to the engine itself (`engine.add`). With `replan_every` the operator re-plans itself every that
many records (replay, the back-fill); without it the host does, over several operators (a joiner
worker, over its partitions). A new plan is installed between batches, which loses and duplicates
nothing (docs/engine.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamjoin.engine import JoinPlan, MultiJoin, Result
from streamjoin.engine.checkpoint import EngineDelta
from streamjoin.engine.schedule import EmitterRun
from streamjoin.engine.stats import WindowStats
from streamjoin.operator.planning import QueryPlanner
from streamjoin.planner.collector import StatsCollector
from streamjoin.query import QueryDef

__all__ = ["JoinOperator"]


class JoinOperator:
    """Run one query's engine: feed records, get results; follow (and maybe drive) its planner."""

    def __init__(
        self,
        query: QueryDef,
        engine: MultiJoin,
        planner: QueryPlanner,
        *,
        collector: StatsCollector | None,
        replan_every: int | None,
    ) -> None:
        """Wrap `engine`; `collector` observes its records (None: nobody reads statistics)."""
        self.query = query
        self.engine = engine
        self.planner = planner
        self.collector = collector
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
        extra: Any = None,
    ) -> bool:
        """Observe one record and buffer it (see `MultiJoin.add`); return False when it is late."""
        if self.collector is not None:
            self.collector.observe(stream, record, ts)
            self._since_check += 1
        return self.engine.add(
            stream, record, ts=ts, partition=partition, offset=offset, size=size, extra=extra
        )

    def observe(self, stream: str, records: Sequence[Mapping[str, Any]], timestamps: Sequence[float]) -> None:
        """Count records of `stream` for the planner (`records[i]` at `timestamps[i]`), each of
        which goes, or went, to `engine.add` before the next `advance`."""
        if self.collector is not None:
            self.collector.observe_many(stream, records, timestamps)
            self._since_check += len(timestamps)

    def advance(self) -> list[Result]:
        """Re-plan if due, then release and join what the watermark allows."""
        if self._replan_every is not None and self._since_check >= self._replan_every:
            self.replan_if_due()
        return self.engine.advance()

    def finish(self) -> list[Result]:
        """End of input: join everything still buffered."""
        return self.engine.finish()

    @property
    def result_runs(self) -> Sequence[EmitterRun]:
        """Return the runs of the last results that one entry emitted (`MultiJoin.result_runs`)."""
        return self.engine.result_runs

    def take_delta(self) -> EngineDelta:
        """Return what changed since the last call (a journaled engine; see `MultiJoin.take_delta`)."""
        return self.engine.take_delta()

    def request_replan(self) -> None:
        """Re-plan at the next check whatever the rates (the control plane's `POST .../replan`)."""
        self.planner.request()
        if self._replan_every is not None:
            self._since_check = self._replan_every

    def replan_if_due(self) -> JoinPlan | None:
        """Re-plan from this operator's statistics; switch the engine and return the plan if it changed."""
        self._since_check = 0
        if self.collector is None:
            return None
        plan = self.planner.maybe_replan([self.collector])
        if plan is not None:
            self.engine.set_plan(plan)
        return plan

    def set_plan(self, plan: JoinPlan) -> None:
        """Switch the engine to `plan` between batches (the host re-planned)."""
        self.engine.set_plan(plan)

    @property
    def plan(self) -> JoinPlan:
        """Return the plan the engine runs now."""
        return self.engine.plan

    @property
    def watermark(self) -> float:
        """Return the engine's watermark (-inf before any record)."""
        return self.engine.watermark

    @property
    def stats(self) -> Mapping[str, WindowStats]:
        """Return the engine's live statistics of each input's window, by stream name."""
        return self.engine.stats
