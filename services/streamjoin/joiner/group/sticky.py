"""`StickyAssignor`: Faust's co-partitioned assignor, fed one consistent previous assignment.

Faust's `PartitionAssignor` keeps each member's previous partitions (sticky), group by group of
co-partitioned topics, and assigns partition p of every topic of a group to one member. It reads a
member's previous partitions of a group from the first topic of the group it finds assigned, in set
order. While the workers subscribe to a new query's topics one after another, the first worker that
did is given every partition of them (it is their only subscriber); at the next rebalance the group
holds them with the older topics, and if the new topic is the one read, that worker claims every
partition, the assignor trims it back to its share in arbitrary order, and the two workers may
swap every partition: every operator moves, and keeping operators across a rebalance
(docs/joiner.md, "Rebalances") gains nothing.

So before Faust assigns, each partition p of the topics with n partitions gets one previous owner,
the member that held p of the most topics, each topic counting once per member it was spread over
(a topic one member held whole, as its only subscriber, says the least), and every member's
previous assignment of those topics is rewritten to the partitions it owns so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from faust.assignor import PartitionAssignor
from faust.assignor.client_assignment import ClientMetadata

__all__ = ["StickyAssignor", "consistent_previous"]

Actives = Mapping[str, Mapping[str, list[int]]]
"""Each member's previous active partitions: member → topic → partitions."""


def consistent_previous(actives: Actives, counts: Mapping[str, int]) -> dict[str, dict[str, list[int]]]:
    """Return `actives` with partition p of every topic of `counts`'s partition count n held by one
    member: the one that held p of the most topics of n partitions, weighted by how many members each
    topic was spread over (ties to the smaller member id). Topics `counts` does not know are kept.

    >>> prev = {"w1": {"a": [0, 1], "new": [0, 1, 2, 3]}, "w2": {"a": [2, 3]}}
    >>> consistent_previous(prev, {"a": 4, "new": 4})
    {'w1': {'a': [0, 1], 'new': [0, 1]}, 'w2': {'a': [2, 3]}}
    """
    spread = Counter(topic for held in actives.values() for topic, parts in held.items() if parts)
    votes: dict[tuple[int, int], Counter[str]] = {}
    for member, held in actives.items():
        for topic, parts in held.items():
            if topic in counts:
                for p in parts:
                    votes.setdefault((counts[topic], p), Counter())[member] += spread[topic]
    owner = {key: min(c, key=lambda m: (-c[m], m)) for key, c in votes.items()}
    result: dict[str, dict[str, list[int]]] = {}
    for member, held in actives.items():
        result[member] = {
            topic: [p for p in range(counts[topic]) if owner.get((counts[topic], p)) == member]
            if topic in counts
            else list(parts)
            for topic, parts in held.items()
        }
    return result


class StickyAssignor(PartitionAssignor):
    """Faust's assignor, given every member's previous assignment made consistent first."""

    def _perform_assignment(self, cluster: Any, member_metadata: Any) -> Any:
        clients = {m: ClientMetadata.loads(meta.user_data) for m, meta in member_metadata.items()}
        topics = {t for c in clients.values() for t in c.assignment.actives}
        counts = {t: len(cluster.partitions_for_topic(t) or ()) for t in topics}
        previous = {m: dict(c.assignment.actives) for m, c in clients.items()}
        fixed = consistent_previous(previous, {t: n for t, n in counts.items() if n > 0})
        rewritten = {}
        for member, meta in member_metadata.items():
            client = clients[member]
            client.assignment.actives = fixed[member]
            rewritten[member] = type(meta)(meta.version, meta.subscription, client.dumps())
        return super()._perform_assignment(cluster, rewritten)
