"""Choose and re-choose a query's join order from the statistics its operators observe.

With `order: "auto"` the planner (`streamjoin.planner`, Golab & Özsu's cost model and heuristics)
re-plans every few seconds from the windows' statistics summed over the worker's partitions,
switching when a stream's rate moved by the `Replanner`'s threshold or on a re-plan request. A
written order is planned once (its cost is still estimated for the Control Tables).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from typing import Any

from streamjoin.engine import JoinPlan, MultiJoin, default_plan
from streamjoin.planner import Replanner, StreamStats
from streamjoin.query.model import QueryDef, RangeWindow

__all__ = ["QueryPlanner"]

_log = logging.getLogger(__name__)


class QueryPlanner:
    """Hold one query's current plan and re-plan it from observed statistics."""

    def __init__(self, query: QueryDef) -> None:
        self.query = query
        self.plan: JoinPlan = default_plan(query)
        self.unpublished = True
        self._replanner = Replanner(query)
        self._stats: dict[str, StreamStats] = {}

    def observe(self, engines: Iterable[MultiJoin]) -> dict[str, StreamStats] | None:
        """Return per-stream cost-model statistics summed over `engines` (None before any data)."""
        totals: dict[str, dict[str, float]] = {}
        for engine in engines:
            for name, ws in engine.stats.items():
                t = totals.setdefault(name, {"arrivals": 0.0, "distinct": 0.0, "span": 0.0})
                t["arrivals"] += ws.arrivals
                t["distinct"] += ws.distinct_keys
                if ws.first_ts is not None and ws.last_ts is not None:
                    t["span"] = max(t["span"], ws.last_ts - ws.first_ts)
        if not totals or any(t["span"] <= 0 for t in totals.values()):
            return None
        stats = {}
        for inp in self.query.inputs:
            t = totals[inp.stream]
            window = inp.window
            stats[inp.stream] = StreamStats(
                name=inp.stream,
                rate=t["arrivals"] / t["span"],
                window=window.range if isinstance(window, RangeWindow) else None,
                rows=None if isinstance(window, RangeWindow) else window.rows,
                distinct=max(t["distinct"], 1.0),
            )
        self._stats = stats
        return stats

    def maybe_replan(self, engines: Iterable[MultiJoin], *, force: bool = False) -> JoinPlan | None:
        """Return a new plan when the statistics call for one (or `force`), else None."""
        stats = self.observe(engines)
        if stats is None:
            return None
        if force:
            self._replanner.request()
        try:
            plan = self._replanner.observe(stats)
        except ValueError as exc:  # statistics the cost model refuses: keep the plan
            _log.warning("query %s: not re-planned: %s", self.query.name, exc)
            return None
        if plan is None or plan == self.plan:
            return None
        self.plan = plan
        return plan

    def statistics(self) -> dict[str, dict[str, Any]]:
        """Return the statistics the current plan was chosen from, per stream."""
        return {name: dataclasses.asdict(st) for name, st in self._stats.items()}
