"""Controls changed at runtime through the registry (docs/joiner.md, "Queries at runtime").

A paused query reads nothing and publishes nothing; resumed (here together with a switch from eager
to lazy evaluation and expiration), it continues from where it stopped, and the output is still the
oracle's, exactly once.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import TopicPartition
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    produce,
    register_query,
    run_scenario,
    wait_running,
    wait_state,
)

from streamjoin.kafka import KafkaClients, end_offsets, new_consumer
from streamjoin.registry import RegistryStore

pytestmark = pytest.mark.timeout(180)

LAZY = {"evaluation": {"mode": "lazy", "every": 25}, "expiration": {"mode": "lazy", "every": 50}}


async def _output_size(bootstrap: str, topic: str, partitions: int) -> int:
    consumer = new_consumer(KafkaClients(bootstrap), client_id="test-output-size")
    await consumer.start()
    try:
        ends = await end_offsets(consumer, [TopicPartition(topic, p) for p in range(partitions)], exact=True)
    finally:
        await consumer.stop()
    return sum(ends.values())


def test_pause_then_resume_lazily_keeps_every_result_once(
    query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    s = query_setup(4)
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=300, keys=25,
                      seed=21, lateness=2)  # fmt: skip
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)
    half = len(w.items) // 2

    async def scenario() -> tuple[Any, list[Any], int, int]:
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 4)
        events = produce(kafka_broker, s.topics, w.items[:half])
        await asyncio.sleep(2)  # let the first half be joined
        async with RegistryStore(redis_server, prefix=s.prefix) as registry:
            await registry.set_controls(s.name, {"paused": True})
        await wait_state(redis_server, s.prefix, s.name, 4, "paused")
        events += produce(kafka_broker, s.topics, w.items[half:])
        before = await _output_size(kafka_broker, s.output, 4)
        await asyncio.sleep(3)
        during = await _output_size(kafka_broker, s.output, 4)
        async with RegistryStore(redis_server, prefix=s.prefix) as registry:
            await registry.set_controls(s.name, {"paused": False, **LAZY})
        await wait_running(redis_server, s.prefix, s.name, 4)
        want = expected_ids(w.query, events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=60, quiet_s=3
        )
        return want, records, before, during

    (want, records, before, during), _ = run_scenario(joiner, scenario)
    got = Counter(json.loads(r.value)["id"] for r in records)
    assert during == before, "a paused query published results"
    assert 0 < before < sum(want.values()), "the pause should fall between results"
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
