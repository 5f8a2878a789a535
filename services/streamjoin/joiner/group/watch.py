"""How long a worker has waited for its consumer group to hand out an assignment, and what it does
when the wait is too long: it leaves the group by exiting (its supervisor starts it again).

A rebalance runs from the revocation (before the worker's JoinGroup) to the assignment (after its
SyncGroup); a worker that has just started waits the same way for its first assignment. A healthy
rebalance ends within a few seconds once every live member has rejoined: a member that died is
noticed within one session timeout, a Kafka coordinator waits for it at most one more session
timeout, and a live member rejoins as soon as its revocation (the operators' stop and the
producer's flush, each bounded by `OperatorConfig.stop_timeout_ms`, 5 s) is done. A worker still
waiting after `stall_bound_ms` (by default three session timeouts, 18 s with the fault tests' 6 s)
is stuck: the embedded broker
(tansu) was seen to leave every member of a group without an assignment after a clean restart
(docs/reliability.md, "Proof"; the leader's LeaveGroup, which workers no longer send, caused it:
`app.StayingConsumerThread`), and a new member was seen to wait for its first join beyond the bound.

`GroupWatch` reports it as a readiness problem ("group") and `worker.checks.watch_faust` makes the
worker exit with `EXIT_GROUP_STALLED`: a new process joins as a new member, which the same broker always
served. Leaving in-process would mean stopping and re-creating Faust's consumer and conductor,
which Faust does not support while a rebalance is under way. While no broker answers the worker's
probe ("kafka" failing) it waits, and its clock starts again once one does: a new process would
not join a group either, and the join could not end meanwhile.

>>> now = [0.0]
>>> watch = GroupWatch(bound_s=18.0, clock=lambda: now[0])
>>> watch.assigned(); watch.revoked(); now[0] = 10.0; watch.problem() is None
True
>>> now[0] = 20.0; watch.problem()
'no partition assignment for 20 s after a rebalance began (the join should end within 18 s)'
>>> watch.broker_down(); now[0] = 30.0; watch.problem() is None  # measured again from 20 s
True
>>> watch.assigned(); watch.problem() is None
True
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = [
    "EXIT_GROUP_STALLED",
    "GroupWatch",
    "broker_down",
    "default_stall_bound_ms",
    "group_problem",
    "watch_group",
]

EXIT_GROUP_STALLED = 75
"""The worker's exit code when it left a stalled group (EX_TEMPFAIL: start it again)."""


def default_stall_bound_ms(session_timeout_ms: int) -> int:
    """Return the default stall bound: three session timeouts (see the module)."""
    return 3 * session_timeout_ms


class GroupWatch:
    """When the current rebalance began (None: the worker holds an assignment).

    A new watch counts as waiting: a worker's first join can stall like any later one.
    """

    def __init__(self, bound_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.bound_s = bound_s
        self._clock = clock
        self._since: float | None = clock()

    def revoked(self) -> None:
        """A rebalance began (the first revocation of a rebalance counts)."""
        if self._since is None:
            self._since = self._clock()

    def assigned(self) -> None:
        """The group handed out an assignment: the rebalance is over."""
        self._since = None

    def broker_down(self) -> None:
        """No broker answers: a waiting worker's clock starts again (the join cannot end meanwhile)."""
        if self._since is not None:
            self._since = self._clock()

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


def watch_group(app: Any, *, stall_bound_ms: int) -> GroupWatch:
    """Watch Faust app `app`'s rebalances (its revoked and assigned signals); return the watch."""
    watch = GroupWatch(stall_bound_ms / 1000)

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


def broker_down(app: Any) -> None:
    """Tell `watch_group`'s watch of `app` that no broker answers (`GroupWatch.broker_down`)."""
    watch = _WATCHES.get(app)
    if watch is not None:
        watch.broker_down()
