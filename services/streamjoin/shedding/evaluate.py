"""Evaluate shedding offline: the exact result, the optimum and every policy, as one JSON object.

The shape (numbers that are whole are written as integers)::

    {"exact": {"results": 9, "importance": 32},
     "optimum": {"results": 7, "importance": 30, "method": "odja"},
     "policies": [{"policy": "random", "results": 3, "importance": 14}, ...]}

For more than two inputs `optimum.method` is `flow-upper-bound`: `importance` bounds every schedule
from above, and `optimum.feasible` gives the results and importance of a schedule that reaches
`feasible.importance` (so the true optimum lies between the two).
"""

from __future__ import annotations

from typing import Any

from streamjoin.shedding.instance import ShedInstance
from streamjoin.shedding.optimum import Method, optimum
from streamjoin.shedding.policy import POLICIES, make_policy
from streamjoin.shedding.simulate import simulate

__all__ = ["evaluate", "number"]


def number(value: float) -> float | int:
    """Return `value` rounded to 9 decimals, as an int when it is whole."""
    rounded = round(value, 9)
    return int(rounded) if rounded.is_integer() else rounded


def evaluate(
    instance: ShedInstance, memory: int, *, seed: int = 0, method: Method = "auto"
) -> dict[str, Any]:
    """Return the report of `instance` under a budget of `memory` records split over its windows.

    Raises:
        ValueError: `memory` is below one record per window.
    """
    share = memory // instance.windows
    if share < 1:
        raise ValueError(f"memory {memory} is below one record per window ({instance.windows} windows)")
    exact = simulate(instance)
    best = optimum(instance, exact.results, share, method)
    report: dict[str, Any] = {
        "exact": {"results": len(exact.results), "importance": number(exact.importance)},
        "optimum": {
            "results": best.results,
            "importance": number(best.importance),
            "method": best.method,
        },
        "policies": [],
    }
    if not best.exact:
        report["optimum"]["feasible"] = {
            "results": best.results,
            "importance": number(best.feasible_importance),
        }
    for name in POLICIES:
        outcome = simulate(instance, make_policy(name, instance.context(seed)), share)
        report["policies"].append(
            {"policy": name, "results": len(outcome.results), "importance": number(outcome.importance)}
        )
    return report
