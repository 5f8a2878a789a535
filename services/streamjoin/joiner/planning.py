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
from streamjoin.query.bounds import effective_window
from streamjoin.query.model import QueryDef, RangeWindow

__all__ = ["QueryPlanner"]

_log = logging.getLogger(__name__)


FULL_INTERVAL_RECORDS = 1_000
"""An interval between observations with this many arrivals (all inputs) replaces the rates; a
quieter one is blended in proportionally, so a few records cannot swing the plan."""


class QueryPlanner:
    """Hold one query's current plan and re-plan it from observed statistics.

    Rates are measured between observations (arrivals over the event time that passed on the
    query's common clock, the newest timestamp of any input), not since the start: a stream that
    became ten times as fast shows it at the next re-plan, and one that stopped falls to zero.
    """

    def __init__(self, query: QueryDef) -> None:
        self.query = query
        self.plan: JoinPlan = default_plan(query)
        self.unpublished = True
        self._replanner = Replanner(query)
        self._stats: dict[str, StreamStats] = {}
        self._rates: dict[str, float] = {}
        self._seen: dict[str, float] = {}
        """Arrivals per stream at the last observation, and the event time then (`_seen_at`)."""
        self._seen_at = 0.0

    def observe(self, engines: Iterable[MultiJoin]) -> dict[str, StreamStats] | None:
        """Return per-stream cost-model statistics over `engines` (None before any data)."""
        totals: dict[str, dict[str, float]] = {}
        first = now = None
        for engine in engines:
            for name, ws in engine.stats.items():
                t = totals.setdefault(name, {"arrivals": 0.0, "distinct": 0.0})
                t["arrivals"] += ws.arrivals
                t["distinct"] += ws.distinct_keys
                if ws.first_ts is not None and ws.last_ts is not None:
                    first = ws.first_ts if first is None else min(first, ws.first_ts)
                    now = ws.last_ts if now is None else max(now, ws.last_ts)
        if not totals or first is None or now is None or now <= first:
            return None
        rates = self._measure({name: t["arrivals"] for name, t in totals.items()}, first, now)
        if rates is None:
            return None
        stats = {}
        for inp in self.query.inputs:
            window = effective_window(self.query, inp.stream)
            stats[inp.stream] = StreamStats(
                name=inp.stream,
                rate=rates[inp.stream],
                window=window.range if isinstance(window, RangeWindow) else None,
                rows=None if isinstance(window, RangeWindow) else window.rows,
                distinct=max(totals[inp.stream]["distinct"], 1.0),
            )
        self._stats = stats
        return stats

    def _measure(self, arrivals: dict[str, float], first: float, now: float) -> dict[str, float] | None:
        """Return each stream's rate: since the last observation, blended by how much arrived."""
        seen, seen_at = self._seen, self._seen_at
        restarted = any(arrivals[name] < seen.get(name, 0.0) for name in arrivals)
        if not self._rates or restarted:  # first observation, or operators restarted from zero
            rates = {name: n / (now - first) for name, n in arrivals.items()}
        elif now <= seen_at:
            return dict(self._rates)  # no event time passed: nothing new to measure
        else:
            fresh = {name: arrivals[name] - seen.get(name, 0.0) for name in arrivals}
            weight = min(sum(fresh.values()) / FULL_INTERVAL_RECORDS, 1.0)
            span = now - seen_at
            rates = {
                name: weight * fresh[name] / span + (1 - weight) * self._rates.get(name, 0.0)
                for name in arrivals
            }
        self._seen, self._seen_at, self._rates = dict(arrivals), now, rates
        return rates

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
