"""Slots: what the joiners' consumer group assigns, and the slot of each operator and repartitioner
(docs/joiner.md, "Slots").

Every worker subscribes to one internal topic of S partitions, the slots (`SLOTS_TOPIC`); the group
assigns those, and a worker runs the operators and repartitioners whose slot it was assigned. A
query registered or deleted changes no subscription, so it rebalances nothing; only workers coming
and going do. Partition p of query q is in slot `(offset(q) + p) mod S`: everything of one
(query, p) is in one slot, the N partitions of a query are in N consecutive slots (distinct while
N <= S), and the offset, a stable hash of the query's name, spreads the queries over the ring. Why
an offset: the assignor deals the slots round robin at first, but after a worker leaves and comes
back it may hold a run of consecutive slots; without an offset every query smaller than that run
would land on that one worker. A repartitioner of source partition s is in slot
`(offset(q) + s) mod S`, with operator s (it is a job of its own; where it runs does not matter).
"""

from __future__ import annotations

import zlib

__all__ = ["slot_of"]


def slot_of(query: str, partition: int, partitions: int, slots: int) -> int:
    """Return the slot of partition `partition` of `query`, which has `partitions` (N), among `slots`.

    >>> [(slot_of("q", p, 4, 64) - slot_of("q", 0, 4, 64)) % 64 for p in range(4)]
    [0, 17, 34, 51]
    >>> slot_of("q", 64, 1, 64) == slot_of("q", 0, 1, 64)
    True
    """
    stride = max(slots // max(partitions, 1), 1) | 1
    return (zlib.crc32(query.encode()) + partition * stride) % slots
