"""How long a worker has waited for its consumer group to hand out an assignment.

A rebalance runs from the revocation (before the worker's JoinGroup) to the assignment (after its
SyncGroup). The broker ends a join at the latest when the rebalance timeout expires, so a worker
still waiting well past it (the rebalance timeout plus two session timeouts) is stuck: its group
coordinator never completed the join, and the worker processes nothing. `GroupWatch` reports that
as a readiness problem ("group"), so `/readyz` and the log show it instead of a silent worker
(docs/reliability.md, "Proof").

>>> now = [0.0]
>>> watch = GroupWatch(bound_s=72.0, clock=lambda: now[0])
>>> watch.revoked(); now[0] = 50.0; watch.problem() is None
True
>>> now[0] = 80.0; watch.problem()
'no partition assignment for 80 s after a rebalance began (the join should end within 72 s)'
>>> watch.assigned(); watch.problem() is None
True
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["GroupWatch", "group_problem", "watch_group"]


class GroupWatch:
    """When the current rebalance began (None: the worker holds an assignment)."""

    def __init__(self, bound_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.bound_s = bound_s
        self._clock = clock
        self._since: float | None = None

    def revoked(self) -> None:
        """A rebalance began (the first revocation of a rebalance counts)."""
        if self._since is None:
            self._since = self._clock()

    def assigned(self) -> None:
        """The group handed out an assignment: the rebalance is over."""
        self._since = None

    def problem(self) -> str | None:
        """Return why the worker is stuck in a rebalance, or None."""
        if self._since is None:
            return None
        waited = self._clock() - self._since
        if waited <= self.bound_s:
            return None
        return (
            f"no partition assignment for {waited:.0f} s after a rebalance began"
            f" (the join should end within {self.bound_s:.0f} s)"
        )


_WATCHES: weakref.WeakKeyDictionary[Any, GroupWatch] = weakref.WeakKeyDictionary()


def watch_group(app: Any, *, rebalance_timeout_s: float, session_timeout_s: float) -> GroupWatch:
    """Watch Faust app `app`'s rebalances (its revoked and assigned signals); return the watch."""
    watch = GroupWatch(rebalance_timeout_s + 2 * session_timeout_s)

    async def on_revoked(sender: Any, revoked: Any, **_: Any) -> None:
        watch.revoked()

    async def on_assigned(sender: Any, assigned: Any, **_: Any) -> None:
        watch.assigned()

    app.on_partitions_revoked.connect(on_revoked, weak=False)
    app.on_partitions_assigned.connect(on_assigned, weak=False)
    _WATCHES[app] = watch
    return watch


def group_problem(app: Any) -> str | None:
    """Return the problem `watch_group`'s watch of `app` reports (None: fine, or not watched)."""
    watch = _WATCHES.get(app)
    return watch.problem() if watch is not None else None
