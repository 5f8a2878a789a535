"""`Assignment`: the slots the group assigned a worker, and those a rebalance under way revoked.

The group's eager protocol revokes every slot before it assigns them again, when a worker joins or
leaves (a query registered or deleted changes nothing: `worker.slots`). Between the two a worker
holds what runs in the revoked slots (`operators.hold`): it may start nothing there (the slot may go
to another worker), and it stops nothing there either (it may come back). The assignment then says
which of the held ones to release and which to stop (docs/joiner.md, "Rebalances").
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Assignment"]


class Assignment:
    """The worker's slots: `owns` what it may run, `holds` what it may keep through a rebalance.

    >>> a = Assignment()
    >>> a.assign([0, 1])
    >>> sorted(a.revoke([0, 1, 2]))
    [0, 1]
    >>> a.owns(0), a.holds(0), a.rebalancing
    (False, True, True)
    >>> a.assign([0])
    >>> a.owns(0), a.holds(1), a.rebalancing
    (True, False, False)
    """

    def __init__(self) -> None:
        self.slots: set[int] = set()
        """The last assignment."""
        self.revoked: set[int] = set()
        """The slots of the last assignment a rebalance under way revoked."""

    @property
    def rebalancing(self) -> bool:
        """Return True between a revoke and the next assignment."""
        return bool(self.revoked)

    def revoke(self, slots: Iterable[int]) -> set[int]:
        """Note a revoke; return the slots it took that were the worker's."""
        lost = set(slots) & self.slots
        self.revoked |= lost
        return lost

    def assign(self, slots: Iterable[int]) -> None:
        """Take a new assignment: the rebalance is over."""
        self.slots = set(slots)
        self.revoked = set()

    def owns(self, slot: int) -> bool:
        """Return True if the slot is the worker's and no rebalance revoked it."""
        return slot in self.slots and slot not in self.revoked

    def holds(self, slot: int) -> bool:
        """Return True if the slot is the worker's, or was until a rebalance under way revoked it."""
        return slot in self.slots
