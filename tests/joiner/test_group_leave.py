"""A worker stopped cleanly stays a member of its consumer group until its session times out: it
sends no LeaveGroup (`joiner/app.StayingConsumerThread`), as Kafka Streams' members do, so a rolling
restart costs one rebalance per worker instead of two (docs/joiner.md)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from tests.joiner.harness import JoinerProcess

from streamjoin.topics import SLOTS_TOPIC

SESSION_TIMEOUT_S = 16
"""The workers' session timeout. A member that left would be gone at once: the next member is
assigned within a few seconds (the dev broker's `group.initial.rebalance.delay.ms` is 0)."""

HEARTBEAT_S = 2
"""The workers' heartbeat period (`joiner.group.app.make_app`): a stopped member's session runs out
between `SESSION_TIMEOUT_S - HEARTBEAT_S` and `SESSION_TIMEOUT_S` after it stopped."""

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]


class _FaustNamedAssignor(RoundRobinPartitionAssignor):  # type: ignore[misc]
    """Round robin under the workers' protocol name: a consumer that can join their group."""

    name = "faust"


class _FirstAssignment(ConsumerRebalanceListener):  # type: ignore[misc]
    """When the consumer first held a partition."""

    def __init__(self) -> None:
        self.at: float | None = None

    async def on_partitions_revoked(self, revoked: Any) -> None:
        pass

    async def on_partitions_assigned(self, assigned: Any) -> None:
        if assigned and self.at is None:
            self.at = time.monotonic()


async def _assigned_at(bootstrap: str, group: str) -> float:
    """Join `group` as a plain consumer of the slots topic; return when it first held a partition."""
    listener = _FirstAssignment()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6_000,
                                heartbeat_interval_ms=1_000, enable_auto_commit=False,
                                partition_assignment_strategy=(_FaustNamedAssignor,))  # fmt: skip
    consumer.subscribe([SLOTS_TOPIC], listener=listener)
    await consumer.start()
    try:
        deadline = time.monotonic() + 90
        while listener.at is None and time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=200)
    finally:
        await consumer.stop()
    assert listener.at is not None, "the plain consumer was never assigned a slot"
    return listener.at


def _started(worker: JoinerProcess) -> None:
    deadline = time.monotonic() + 60
    while "started (group" not in worker.log_tail() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "started (group" in worker.log_tail(), worker.log_tail()


def test_stopped_workers_stay_in_their_group_until_their_sessions_time_out(
    kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    """Two workers (the second one's join makes a generation past 0: aiokafka sends no LeaveGroup
    from generation 0) stop cleanly. Had they left, the next member would hold the slots
    within a few seconds; as it is, only once their sessions have run out."""
    group, prefix = f"g-{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:8]}:"
    session = ["--session-timeout-ms", str(SESSION_TIMEOUT_S * 1000)]
    workers = [JoinerProcess(tmp_path, kafka_broker, redis_server, group=group, prefix=prefix, name=f"w{i}",
                             extra=session) for i in (1, 2)]  # fmt: skip
    try:
        for worker in workers:
            worker.start()
            _started(worker)
        for worker in workers:
            assert worker.stop() == 0, worker.log_tail()
        stopped = time.monotonic()
    finally:
        for worker in workers:
            worker.stop()
    waited = asyncio.run(_assigned_at(kafka_broker, group)) - stopped
    assert waited > SESSION_TIMEOUT_S - HEARTBEAT_S - 1, (
        f"assigned {waited:.1f} s after the workers stopped: they left"
    )
