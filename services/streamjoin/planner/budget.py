"""`SearchBudget`: the wall-clock bound of one planning run.

A plan search (the heuristics' candidates and polishing, the exhaustive branch and bound) asks its
budget between steps; once the bound is reached the heuristics keep the best order found so far and
the exhaustive search stops (`BudgetExhausted`), so the planner falls back to the heuristic's order.
The planner says which happened in the plan's reason.

>>> budget = SearchBudget(0)
>>> budget.expired()
True
>>> budget.reached
True
>>> SearchBudget(None).expired()
False
"""

from __future__ import annotations

import time

__all__ = ["UNBOUNDED", "BudgetExhausted", "SearchBudget"]


class BudgetExhausted(Exception):
    """The search ran out of time before it finished (raised by `SearchBudget.check`)."""


class SearchBudget:
    """A deadline `limit_ms` from now (None: no bound); remembers whether it was reached."""

    __slots__ = ("_deadline", "limit_ms", "reached")

    def __init__(self, limit_ms: int | None) -> None:
        """Start the clock: the search may run `limit_ms` milliseconds (None: unbounded)."""
        if limit_ms is not None and limit_ms < 0:
            raise ValueError("limit_ms must be >= 0 (or None)")
        self.limit_ms = limit_ms
        self._deadline = None if limit_ms is None else time.monotonic() + limit_ms / 1000
        self.reached = False

    def expired(self) -> bool:
        """Return True once the deadline passed (and from then on)."""
        if self.reached:
            return True
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self.reached = True
        return self.reached

    def check(self) -> None:
        """Raise `BudgetExhausted` once the deadline passed."""
        if self.expired():
            raise BudgetExhausted(f"planning time bound of {self.limit_ms} ms reached")


UNBOUNDED = SearchBudget(None)
"""The budget of callers that give none (never expires)."""
