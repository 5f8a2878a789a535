"""A rebalance holds the operators of the revoked partitions and keeps those that come back
(worker/rebalance.py, operators/hold.py): the worker's own revoke and assign handlers, driven as
Faust's eager protocol calls them (every partition revoked, then assigned again), on a real worker
in this process with its real operators, the real broker and Redis.

The operator of a partition that comes back is the same object: not stopped, not claimed again,
its epoch in Redis unchanged. The one whose partition went elsewhere stops; it claims its
partition again (a new epoch) when it comes back. Results before, between and after: the oracle's,
exactly once.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    consume_output,
    expected_ids,
    make_workload,
    produce,
    register_query,
    wait_running,
)

from streamjoin.joiner import JoinerWorker, WorkerConfig
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.kafka import TopicPartition
from streamjoin.settings import load_settings
from streamjoin.state.redis.keys import StateKeys

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow, pytest.mark.integration]


async def _epoch(redis_url: str, prefix: str, query: str, partition: int) -> int:
    async with Redis.from_url(redis_url) as redis:
        value = await redis.hget(StateKeys(prefix, query, partition).meta, "epoch")
    return int(value or 0)


def test_a_rebalance_keeps_the_operators_whose_partitions_come_back(
    query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str
) -> None:
    s = query_setup(2)
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=2, per_stream=300, keys=40,
                      seed=21, lateness=2)  # fmt: skip
    third = len(w.items) // 3
    settings = load_settings(kafka_bootstrap=kafka_broker, redis_url=redis_server)
    # inputs never go idle between the chunks produced (the oracle knows no wall clock), as for
    # the joiner processes of the other tests (harness.JoinerProcess)
    operator = OperatorConfig(idle_timeout_ms=60_000)
    config = WorkerConfig(worker_id="w-hold", group=s.group, prefix=s.prefix, operator=operator)
    worker = JoinerWorker(settings, config)

    async def epochs() -> list[int]:
        return [await _epoch(redis_server, s.prefix, s.name, p) for p in range(2)]

    want: Counter[str] = Counter()

    async def scenario() -> list[Any]:
        run = asyncio.create_task(worker.run())
        try:
            await register_query(redis_server, s.prefix, w.query_json)
            await wait_running(redis_server, s.prefix, s.name, 2)
            mine = sorted(worker._assignment.partitions)
            assert any(p == 1 for _, p in mine), mine
            tps = [TopicPartition(t, p) for t, p in mine]
            ops = {p: worker._ops[(s.name, p)] for p in range(2)}
            before = await epochs()

            # partition 1 goes elsewhere: its operator stops; partition 0's is kept
            await worker._on_revoked(None, tps)
            await worker._on_assigned(None, [tp for tp in tps if tp.partition == 0])
            for _ in range(50):
                if (s.name, 1) not in worker._ops:
                    break
                await asyncio.sleep(0.1)
            assert (s.name, 1) not in worker._ops and ops[1].done
            assert worker._ops[(s.name, 0)] is ops[0] and not ops[0].held
            # and comes back: a new operator claims it again
            await worker._on_revoked(None, [tp for tp in tps if tp.partition == 0])
            await worker._on_assigned(None, tps)
            for _ in range(100):
                if (now := await epochs())[1] > before[1]:
                    break
                await asyncio.sleep(0.1)
            assert now[0] == before[0] and now[1] > before[1], (before, now)
            assert worker._ops[(s.name, 0)] is ops[0] and worker._ops[(s.name, 1)] is not ops[1]
            await wait_running(redis_server, s.prefix, s.name, 2)
            ops, before = {p: worker._ops[(s.name, p)] for p in range(2)}, await epochs()

            # every partition revoked and back, twice, records flowing: both operators held, then
            # released, not restarted
            events = []
            for chunk in (w.items[:third], w.items[third : 2 * third]):
                events += await asyncio.to_thread(produce, kafka_broker, s.topics, chunk)
                await worker._on_revoked(None, tps)
                assert all(op.held for op in ops.values())
                assert all([await op.settled() for op in ops.values()])
                await worker._on_assigned(None, tps)
                await asyncio.sleep(1.5)  # a reconcile (the heartbeat's) ran meanwhile
                assert {p: worker._ops.get((s.name, p)) for p in range(2)} == ops
                assert not any(op.held or op.done for op in ops.values())
                assert await epochs() == before
            events += await asyncio.to_thread(produce, kafka_broker, s.topics, w.items[2 * third :])
            want.update(expected_ids(w.query, events))
            return await consume_output(kafka_broker, s.output, want=sum(want.values()), timeout_s=60)
        finally:
            worker.request_stop()
            await asyncio.wait_for(run, 30)

    records = asyncio.run(scenario())
    got = Counter(json.loads(r.value)["id"] for r in records)
    assert sum(want.values()) > 50
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
