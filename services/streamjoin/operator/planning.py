"""`QueryPlanner`: choose and re-choose a query's join order from the statistics its operators observe.

One per query and process: replay and each back-fill task hold one for their operators; a joiner
worker holds one per query for the operators of every partition it runs. Statistics are the
operators' `StatsCollector`s merged (rates summed, distinct values united: `merged_snapshot`), all
on event time, so the same input gives the same statistics in every host. The `Replanner` decides:
a re-plan when a stream's rate moved by its threshold (2x by default) or on request. A written
order is planned once (its cost is still estimated for the Control Tables).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from streamjoin.engine import JoinPlan, default_plan
from streamjoin.planner import Replanner, StreamStats
from streamjoin.planner.collector import StatsCollector, merged_rates, merged_snapshot
from streamjoin.query.model import QueryDef

__all__ = ["QueryPlanner"]

_log = logging.getLogger(__name__)


class QueryPlanner:
    """Hold one query's current plan and re-plan it from its operators' statistics."""

    def __init__(self, query: QueryDef, replanner: Replanner | None = None) -> None:
        """Plan `query` (default: with a `Replanner` of default threshold and planner options)."""
        self.query = query
        self.plan: JoinPlan = default_plan(query)
        self.unpublished = True
        """True until the host published the plan (the joiner writes it to the registry)."""
        self.replanner = replanner or Replanner(query)
        self._stats: dict[str, StreamStats] = {}

    def request(self) -> None:
        """Re-plan at the next `maybe_replan` whatever the rates (`POST /queries/{name}/replan`)."""
        self.replanner.request()

    def due(self, collectors: Iterable[StatsCollector]) -> bool:
        """Return True when `maybe_replan` would run the planner (cheap: rates only)."""
        rates = merged_rates(list(collectors))
        return rates is not None and self.replanner.due(rates)

    def observe(self, collectors: Iterable[StatsCollector]) -> dict[str, StreamStats] | None:
        """Return the statistics of the query over `collectors` (None before any record)."""
        seen = [c for c in collectors if c.newest is not None]
        if not seen:
            return None
        self._stats = merged_snapshot(seen)
        return self._stats

    def maybe_replan(self, collectors: Iterable[StatsCollector], *, force: bool = False) -> JoinPlan | None:
        """Return a new plan when the statistics call for one (or `force`), else None."""
        stats = self.prepare(collectors, force=force)
        return None if stats is None else self.decide(stats)

    def prepare(
        self, collectors: Iterable[StatsCollector], *, force: bool = False
    ) -> dict[str, StreamStats] | None:
        """Return the statistics to plan from when a re-plan is due (or `force`), else None.

        Reads the collectors, so it runs where they are written (the joiner's event loop); the
        search itself (`decide`) may then run on another thread.
        """
        collectors = list(collectors)
        if force:
            self.replanner.request()
        if not self.due(collectors):
            return None
        return self.observe(collectors)

    def decide(self, stats: Mapping[str, StreamStats]) -> JoinPlan | None:
        """Run the planner on `stats` (CPU-bound, bounded by its time limit); return a new plan or None."""
        try:
            plan = self.replanner.observe(stats)
        except ValueError as exc:  # statistics the cost model refuses: keep the plan
            _log.warning("query %s: not re-planned: %s", self.query.name, exc)
            return None
        if plan is None or plan == self.plan:
            return None
        self.plan = plan
        return plan

    def statistics(self) -> dict[str, dict[str, Any]]:
        """Return the statistics the current plan was chosen (or last judged) from, per stream."""
        return {name: dataclasses.asdict(st) for name, st in self._stats.items()}
