"""Re-planning as rates move (Golab & Özsu §5.4, "fluctuating stream arrival rates").

A `Replanner` holds the current plan and the rates it was chosen under. `observe` re-runs the
planner when some stream's rate moved by `threshold` or more (up or down, relative to those rates)
or after `request()`, and returns the new plan only when its orders differ (and, with `min_gain`,
when it is cheaper enough than keeping the current plan under the new statistics). The caller
hands the plan to the engine between batches (`MultiJoin.set_plan`). Every change is logged on the
`streamjoin.planner` logger and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from streamjoin.engine.plan import JoinPlan
from streamjoin.planner.planner import Planner
from streamjoin.planner.stats import StreamStats
from streamjoin.query.model import Predicate, QueryDef

__all__ = ["PlanChange", "Replanner"]

_log = logging.getLogger("streamjoin.planner")
_FLOOR = 1e-9  # rates below this count as this, so a stream that starts (or stops) is a move


@dataclass(frozen=True, slots=True)
class PlanChange:
    """One installed plan change: which plans, why, and under which rates."""

    number: int
    old: JoinPlan
    new: JoinPlan
    reason: str
    rates: Mapping[str, float]


class Replanner:
    """Keep a query's plan fitted to its statistics, re-planning when rates move."""

    def __init__(
        self,
        query: QueryDef,
        planner: Planner | None = None,
        *,
        threshold: float = 2.0,
        min_gain: float = 0.05,
    ) -> None:
        """Re-plan `query` when a rate moves by a factor of `threshold` (> 1) or on request.

        `min_gain` (0 <= min_gain < 1): switch only when the new plan is estimated at least this
        fraction cheaper than the current one under the new statistics (default 5%, so noisy
        statistics do not flap between plans of about the same cost).
        """
        if not threshold > 1:
            raise ValueError("threshold must be > 1")
        if not 0 <= min_gain < 1:
            raise ValueError("min_gain must be in [0, 1)")
        self.query = query
        self.planner = planner or Planner()
        self.threshold = threshold
        self.min_gain = min_gain
        self._plan: JoinPlan | None = None
        self._rates: dict[str, float] = {}
        self._requested = False
        self._replans = 0
        self._history: list[PlanChange] = []

    @property
    def plan(self) -> JoinPlan | None:
        """Return the current plan (None before the first `observe`)."""
        return self._plan

    @property
    def changes(self) -> int:
        """Return how many times the plan changed after the initial one."""
        return len(self._history)

    @property
    def replans(self) -> int:
        """Return how many times the planner ran again after the initial plan."""
        return self._replans

    @property
    def history(self) -> tuple[PlanChange, ...]:
        """Return every plan change, oldest first."""
        return tuple(self._history)

    @property
    def rates(self) -> Mapping[str, float]:
        """Return the rates the current plan was chosen (or last confirmed) under."""
        return dict(self._rates)

    def request(self) -> None:
        """Ask for a re-plan at the next `observe`, whatever the rates."""
        self._requested = True

    def moved(self, rates: Mapping[str, float]) -> list[str]:
        """Return the streams whose rate moved by `threshold` or more since the last plan."""
        out = []
        for name, rate in rates.items():
            old = max(self._rates.get(name, 0.0), _FLOOR)
            new = max(rate, _FLOOR)
            if new / old >= self.threshold or old / new >= self.threshold:
                out.append(name)
        return out

    def due(self, rates: Mapping[str, float]) -> bool:
        """Return True when `observe` would run the planner: no plan yet, requested, or a rate moved.

        Cheap: lets a caller build the full statistics (distinct counts) only when needed.
        """
        return self._plan is None or self._requested or bool(self.moved(rates))

    def observe(
        self,
        stats: Mapping[str, StreamStats],
        *,
        selectivity: Mapping[Predicate, float] | None = None,
    ) -> JoinPlan | None:
        """Return a new plan to switch to, or None to keep the current one.

        The first call returns the initial plan.
        """
        rates = {name: st.rate for name, st in stats.items()}
        if self._plan is None:
            self._plan = self.planner.plan(self.query, stats, selectivity=selectivity)
            self._rates = rates
            _log.info("query %s: initial plan %s (%s)", self.query.name, _show(self._plan), _rates(rates))
            return self._plan
        moved = self.moved(rates)
        if not moved and not self._requested:
            return None
        why = (
            "requested"
            if self._requested
            else "rate moved: "
            + ", ".join(f"{s} {self._rates.get(s, 0.0):.4g} -> {rates[s]:.4g}" for s in moved)
        )
        self._requested = False
        self._replans += 1
        self._rates = rates
        new = self.planner.plan(self.query, stats, selectivity=selectivity)
        current = self._plan
        if new.global_order == current.global_order and dict(new.local_orders) == dict(current.local_orders):
            _log.debug("query %s: re-planned (%s), plan unchanged", self.query.name, why)
            return None
        if self.min_gain and new.estimated_cost is not None:
            model = self.planner.model(self.query, stats, selectivity)
            kept = model.plan_cost(current)
            if new.estimated_cost > kept * (1 - self.min_gain):
                _log.debug(
                    "query %s: new plan not %.0f%% cheaper, kept", self.query.name, 100 * self.min_gain
                )
                return None
        new = JoinPlan(new.global_order, new.local_orders, new.estimated_cost, why)
        change = PlanChange(len(self._history) + 1, current, new, why, rates)
        self._history.append(change)
        self._plan = new
        _log.info(
            "query %s: plan change #%d, %s: %s -> %s (estimated cost %s)",
            self.query.name,
            change.number,
            why,
            _show(current),
            _show(new),
            f"{new.estimated_cost:.6g}" if new.estimated_cost is not None else "?",
        )
        return new


def _show(plan: JoinPlan) -> str:
    derived = JoinPlan.from_global(plan.global_order)
    if dict(plan.local_orders) == dict(derived.local_orders):
        return ",".join(plan.global_order)
    local = "; ".join(f"{o}: {','.join(order)}" for o, order in plan.local_orders.items())
    return f"{','.join(plan.global_order)} [{local}]"


def _rates(rates: Mapping[str, float]) -> str:
    return "rates " + ", ".join(f"{k}={v:.4g}" for k, v in rates.items())
