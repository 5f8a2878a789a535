"""`Assignment`: the partitions the group assigned a worker, and those a rebalance under way revoked.

The group's eager protocol revokes every partition before it assigns them again. Between the two a
worker holds what runs on the revoked partitions (`operators.hold`): it may start nothing there (the
partition may go to another worker), and it stops nothing there either (it may come back). The
assignment then says which of the held ones to release and which to stop (docs/joiner.md,
"Rebalances").
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Assignment", "TopicPartitionKey"]

TopicPartitionKey = tuple[str, int]
"""(topic, partition)."""


class Assignment:
    """The worker's partitions: `owns` what it may run, `holds` what it may keep through a rebalance.

    >>> a = Assignment()
    >>> a.assign([("t", 0), ("t", 1)])
    >>> sorted(a.revoke([("t", 0), ("t", 1), ("u", 0)]))
    [('t', 0), ('t', 1)]
    >>> a.owns("t", 0), a.holds("t", 0), a.rebalancing
    (False, True, True)
    >>> a.assign([("t", 0)])
    >>> a.owns("t", 0), a.holds("t", 1), a.rebalancing
    (True, False, False)
    """

    def __init__(self) -> None:
        self.partitions: set[TopicPartitionKey] = set()
        """The last assignment."""
        self.revoked: set[TopicPartitionKey] = set()
        """The partitions of the last assignment a rebalance under way revoked."""

    @property
    def rebalancing(self) -> bool:
        """Return True between a revoke and the next assignment."""
        return bool(self.revoked)

    def revoke(self, partitions: Iterable[TopicPartitionKey]) -> set[TopicPartitionKey]:
        """Note a revoke; return the partitions it took that were the worker's."""
        lost = set(partitions) & self.partitions
        self.revoked |= lost
        return lost

    def assign(self, partitions: Iterable[TopicPartitionKey]) -> None:
        """Take a new assignment: the rebalance is over."""
        self.partitions = set(partitions)
        self.revoked = set()

    def owns(self, topic: str, partition: int) -> bool:
        """Return True if the partition is the worker's and no rebalance revoked it."""
        return (topic, partition) in self.partitions and (topic, partition) not in self.revoked

    def holds(self, topic: str, partition: int) -> bool:
        """Return True if the partition is the worker's, or was until a rebalance under way revoked it."""
        return (topic, partition) in self.partitions
