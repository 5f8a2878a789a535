"""Slots (joiner/worker/slots.py): what the joiners' group assigns, where each operator runs, and the
`Assignment` a worker keeps of them. The group's assignor is Faust's own, built by `make_app`, given
the members' previous assignments as the group leader receives them."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from faust.assignor.client_assignment import ClientAssignment, ClientMetadata

from streamjoin.joiner import JoinerWorker, WorkerConfig
from streamjoin.joiner.group.app import make_app
from streamjoin.joiner.layout.topic_setup import ensure_slots_topic
from streamjoin.joiner.worker.assignment import Assignment
from streamjoin.joiner.worker.checks import EXIT_MISCONFIGURED
from streamjoin.joiner.worker.slots import slot_of
from streamjoin.kafka import KafkaClients
from streamjoin.settings import load_settings
from streamjoin.topics import SLOTS_TOPIC

S = 64
Held = Mapping[str, list[int]]
"""Each member's slots."""


class _Cluster:
    """The slots topic's partitions, as the group leader's metadata gives them."""

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(S)) if topic == SLOTS_TOPIC else set()


def _assign(app: Any, members: Sequence[str], held: Held) -> dict[str, list[int]]:
    metadata = {
        member: ConsumerProtocolMemberMetadata(
            0,
            [SLOTS_TOPIC],
            ClientMetadata(
                assignment=ClientAssignment(
                    actives={SLOTS_TOPIC: held[member]} if held.get(member) else {}, standbys={}
                ),
                url=f"http://{member}",
                changelog_distribution={},
            ).dumps(),
        )
        for member in members
    }
    result = app.assignor.assign(_Cluster(), metadata)
    return {m: sorted(p for _, ps in a.assignment for p in ps) for m, a in result.items()}


def _rounds(tmp_path: Path) -> list[dict[str, list[int]]]:
    """Two workers; one leaves, comes back, then a third joins: the assignment after each."""

    async def run() -> list[dict[str, list[int]]]:
        app = make_app("g-slots", KafkaClients("127.0.0.1:1"), datadir=str(tmp_path))
        first = _assign(app, ["w1", "w2"], {})
        again = _assign(app, ["w1", "w2"], first)
        alone = _assign(app, ["w1"], again)
        back = _assign(app, ["w1", "w2"], alone)
        third = _assign(app, ["w1", "w2", "w3"], back)
        return [first, again, alone, back, third]

    return asyncio.run(run())


def test_slot_of_keeps_a_querys_partitions_apart_and_wraps_around() -> None:
    for query in ("q", "orders-by-user", "x" * 200):
        for n in (1, 2, 3, 4, 7, 40, S):
            slots = [slot_of(query, p, n, S) for p in range(n)]
            assert len(set(slots)) == n, (query, n)  # N <= S partitions: N distinct slots
        assert slot_of(query, S + 5, S, S) == slot_of(query, 5, S, S)
    assert slot_of("q", 3, 4, S) == (4110462503 + 3 * 17) % S  # stable: crc32, no hash seed
    assert slot_of("q", 0, 1, 1) == 0


def test_the_assignor_keeps_every_slot_in_place_and_spreads_them(tmp_path: Path) -> None:
    first, again, alone, back, third = _rounds(tmp_path)
    for step in (first, again, back):
        assert sorted(s for ss in step.values() for s in ss) == list(range(S))
        assert sorted(len(ss) for ss in step.values()) == [S // 2, S // 2]
    assert again == first  # the same members: nothing moves, so the held operators come back
    assert alone == {"w1": list(range(S))}
    # the slots that stayed put stay put when others join
    assert set(back["w1"]) <= set(alone["w1"])
    assert all(set(third[m]) <= set(back[m]) for m in ("w1", "w2"))
    assert all(20 <= len(ss) <= 22 for ss in third.values()), third


def _spread(step: Mapping[str, list[int]], slot: Callable[[str, int], int]) -> Counter[str]:
    """How many operators of 100 queries of 2 partitions each worker runs."""
    owner = {s: member for member, slots in step.items() for s in slots}
    return Counter(owner[slot(f"query-{q}", p)] for q in range(100) for p in range(2))


def _queries_on_one_worker(step: Mapping[str, list[int]], n: int) -> int:
    """How many of 100 queries of `n` partitions run all on one worker."""
    owner = {s: member for member, slots in step.items() for s in slots}
    return sum(len({owner[slot_of(f"query-{q}", p, n, S)] for p in range(n)}) == 1 for q in range(100))


@pytest.mark.parametrize("round_index", [0, 3, 4])
def test_small_queries_spread_over_the_workers(tmp_path: Path, round_index: int) -> None:
    """After a worker left and came back, Faust's assignor gives each a run of consecutive slots:
    slot p for partition p would put every query smaller than a run on one worker, and consecutive
    slots from an offset every small query on one worker. The offset and the stride spread them,
    whatever the rounds before."""
    step = _rounds(tmp_path)[round_index]
    spread = _spread(step, lambda query, p: slot_of(query, p, 2, S))
    fair = 200 / len(step)
    assert set(spread) == set(step) and all(n > fair / 2 for n in spread.values()), spread
    if round_index == 3:  # the runs: without the offset every operator is on one worker
        assert len(_spread(step, lambda query, p: p % S)) == 1
    if round_index < 4:  # two workers: a query of 2 or 4 partitions runs on both, nearly always
        assert _queries_on_one_worker(step, 2) <= 10 and _queries_on_one_worker(step, 4) <= 5


def test_an_assignment_of_slots_holds_the_revoked_ones_until_the_next() -> None:
    assignment = Assignment()
    assignment.assign([3, 7])
    assert assignment.owns(3) and not assignment.owns(4) and not assignment.rebalancing
    assert assignment.revoke([3, 7, 9]) == {3, 7}  # 9 was never the worker's
    assert assignment.rebalancing and not assignment.owns(3) and assignment.holds(3)
    assignment.assign([7, 9])
    assert assignment.owns(7) and assignment.owns(9) and not assignment.holds(3)
    assert not assignment.rebalancing


@pytest.mark.integration
def test_a_worker_whose_slot_count_is_not_the_topics_does_not_start(
    kafka_broker: str, redis_server: str
) -> None:
    """The slots topic exists (made by the first worker, with the default count): a worker with
    another count would map the queries onto other slots than its group; it exits 78 at start."""
    settings = load_settings(kafka_bootstrap=kafka_broker, redis_url=redis_server)
    assert ensure_slots_topic(KafkaClients.from_settings(settings), WorkerConfig().slots) == S
    worker = JoinerWorker(settings, WorkerConfig(worker_id="w-slots", group="g-slots", slots=S // 2))
    asyncio.run(asyncio.wait_for(worker.run(), 30))
    assert worker.exit_code == EXIT_MISCONFIGURED and not worker.health.started
