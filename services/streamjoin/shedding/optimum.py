"""The offline optimum under a memory budget: exact for two inputs, an upper bound beyond.

- `odja`: the paper's dynamic programme (two inputs, small instances); exact.
- `flow`: the min-cost-flow formulation per window (two inputs, any size); exact (up to the
  rounding of importances to 10^-6 of the smallest gain).
- `flow-upper-bound` (more than two inputs): a result needs *several* older members retained at
  once, so the windows are no longer independent. Each result's importance is split evenly among
  its older members and each window's flow maximises its share; the sum over windows (plus the
  results of records arriving together) bounds every schedule's importance from above, so it is
  what is reported. Playing the windows' plans together is a feasible schedule: its results and
  importance are reported as `feasible`, a lower bound on the true optimum.

`auto` picks `odja` when two inputs make a small enough state space, else `flow`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from streamjoin.shedding.flow import flow_window
from streamjoin.shedding.gains import Gains, produced_by_plan
from streamjoin.shedding.instance import ShedInstance
from streamjoin.shedding.odja import odja_window, odja_work
from streamjoin.shedding.simulate import ShedResult

__all__ = ["ODJA_WORK_LIMIT", "Method", "Optimum", "optimum"]

Method: TypeAlias = Literal["auto", "odja", "flow"]
ODJA_WORK_LIMIT = 200_000
"""`auto` uses ODJA while its estimated state visits per window stay below this."""


@dataclass(frozen=True, slots=True)
class Optimum:
    """The optimum (or its upper bound) and the schedule found.

    Attributes:
        results: the results of the schedule found.
        importance: the optimum's importance (an upper bound when `exact` is False).
        method: `odja`, `flow` or `flow-upper-bound`.
        exact: whether `importance` is the optimum itself.
        feasible_importance: the importance of the schedule found (equal to `importance` when exact).
    """

    results: int
    importance: float
    method: str
    exact: bool
    feasible_importance: float


def optimum(
    instance: ShedInstance, exact: Sequence[ShedResult], share: int, method: Method = "auto"
) -> Optimum:
    """Return the offline optimum of `instance` with at most `share` records per window.

    Args:
        instance: the records.
        exact: the exact results of `instance` (`simulate(instance).results`).
        share: the most records one window may hold.
        method: `auto`, `odja` (two inputs only) or `flow`.

    Raises:
        ValueError: `odja` asked for more than two inputs.
    """
    gains = Gains.of(instance, exact)
    two = instance.windows == 2
    if method == "odja" and not two:
        raise ValueError("odja is the two-input dynamic programme; use flow for more inputs")
    if method == "auto":
        small = all(
            odja_work(instance, gains, w, share, ODJA_WORK_LIMIT) <= ODJA_WORK_LIMIT
            for w in range(instance.windows)
        )
        method = "odja" if two and small else "flow"
    solve = odja_window if method == "odja" else flow_window
    plan: set[tuple[int, int]] = set()
    bound = math.fsum(r.importance for r in gains.free)
    for window in range(instance.windows):
        value, held = solve(instance, gains, window, share)
        plan |= held
        bound += value
    results, feasible = produced_by_plan(instance, exact, plan)
    if two:
        return Optimum(results, feasible, method, True, feasible)
    return Optimum(results, max(bound, feasible), "flow-upper-bound", False, feasible)
