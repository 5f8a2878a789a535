"""The group's assignor keeps every partition with its worker while the workers subscribe to a new
query's topics one after another (group/sticky.py), so the operators a rebalance holds come back
(docs/joiner.md, "Rebalances"). Faust's own assignor, given the same previous assignments, may swap
every partition between the two workers, depending on the order in which it meets the topics."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from faust.assignor.client_assignment import ClientAssignment, ClientMetadata

from streamjoin.joiner.group.app import make_app
from streamjoin.kafka import KafkaClients

Held = Mapping[str, Mapping[str, list[int]]]


@dataclass(frozen=True)
class _Cluster:
    """The partition count of each topic, as the group leader's metadata gives it."""

    counts: Mapping[str, int]

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.counts.get(topic, 0)))


def _assign(app: Any, cluster: _Cluster, subscriptions: Mapping[str, list[str]], held: Held) -> Held:
    metadata = {
        member: ConsumerProtocolMemberMetadata(
            0,
            topics,
            ClientMetadata(
                assignment=ClientAssignment(actives=dict(held.get(member, {})), standbys={}),
                url=f"http://{member}",
                changelog_distribution={},
            ).dumps(),
        )
        for member, topics in subscriptions.items()
    }
    result = app.assignor.assign(cluster, metadata)
    return {m: {t: sorted(ps) for t, ps in a.assignment if ps} for m, a in result.items()}


@pytest.mark.parametrize("early", [0, 1])  # which member (in the leader's order) subscribes first
def test_partitions_stay_put_while_workers_subscribe_to_new_topics_in_turn(
    tmp_path: Path, early: int
) -> None:
    # Faust reads a member's previous partitions from the group's topics in set order (string
    # hashes): 20 new topics, so that some come first whatever the process's hash seed.
    for new in [f"new{i}" for i in range(20)]:
        _check_stays_put(tmp_path, early, new)


def _check_stays_put(tmp_path: Path, early: int, new: str) -> None:
    members = ("w1", "w2")
    first, second = members[early], members[1 - early]
    old = ["a", "b", "m", "y"]
    cluster = _Cluster({t: 4 for t in [*old, new]})

    def subscriptions(first_topics: list[str], second_topics: list[str]) -> dict[str, list[str]]:
        by_member = {first: first_topics, second: second_topics}
        return {m: by_member[m] for m in members}

    async def run() -> list[Held]:
        app = make_app("g-sticky", KafkaClients("127.0.0.1:1"), datadir=str(tmp_path))
        settled = _assign(app, cluster, subscriptions(old, old), {})
        # one worker has laid the new query out: only it reads the new topic
        one = _assign(app, cluster, subscriptions([*old, new], old), settled)
        # the other one has too
        both = _assign(app, cluster, subscriptions([*old, new], [*old, new]), one)
        again = _assign(app, cluster, subscriptions([*old, new], [*old, new]), both)
        return [settled, one, both, again]

    settled, one, both, again = asyncio.run(run())
    mine = {m: settled[m]["a"] for m in members}
    assert sorted(mine[first] + mine[second]) == [0, 1, 2, 3] and mine[first] and mine[second]
    assert one[first][new] == [0, 1, 2, 3]
    for step in (one, both, again):
        for member in members:
            assert all(step[member][t] == mine[member] for t in old), (new, member, step)
    assert {m: both[m][new] for m in members} == mine, new
    assert again == both, new
