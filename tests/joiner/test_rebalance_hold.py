"""A rebalance holds the operators of the revoked slots and keeps those that come back
(worker/rebalance.py, operators/hold.py): the worker's own revoke and assign handlers, driven as
Faust's eager protocol calls them (every slot revoked, then assigned again), on a real worker in this
process with its real operators, the real broker and Redis.

The operator of a slot that comes back is the same object: not stopped, not claimed again, its epoch
in Redis unchanged. The one whose slot went elsewhere stops; it claims its partition again (a new
epoch) when it comes back. Results before, between and after: the oracle's, exactly once.

And a query registered and deleted is no rebalance at all (worker/slots.py): two worker processes
run a first query; a second one comes and goes; no worker logs a revoke or an assignment, the first
query's operators are never claimed again, and its results are the oracle's, exactly once.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    produce,
    register_query,
    wait_running,
)
from tests.joiner.ownership import claims, log_slice, wait_everyone_holds

from streamjoin.joiner import JoinerWorker, WorkerConfig
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.worker.slots import slot_of
from streamjoin.kafka import TopicPartition
from streamjoin.registry import RegistryStore
from streamjoin.settings import load_settings
from streamjoin.state.redis.keys import StateKeys
from streamjoin.testing import Event
from streamjoin.topics import SLOTS_TOPIC

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow, pytest.mark.integration]


async def _epoch(redis_url: str, prefix: str, query: str, partition: int) -> int:
    async with Redis.from_url(redis_url) as redis:
        value = await redis.hget(StateKeys(prefix, query, partition).meta, "epoch")
    return int(value or 0)


def test_a_rebalance_keeps_the_operators_whose_slots_come_back(
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
            slot_1 = slot_of(s.name, 1, 2, config.slots)
            mine = sorted(worker._assignment.slots)
            assert slot_1 in mine and len(mine) == config.slots, mine
            tps = [TopicPartition(SLOTS_TOPIC, slot) for slot in mine]
            ops = {p: worker._ops[(s.name, p)] for p in range(2)}
            before = await epochs()

            # partition 1's slot goes elsewhere: its operator stops; partition 0's is kept
            await worker._on_revoked(None, tps)
            await worker._on_assigned(None, [tp for tp in tps if tp.partition != slot_1])
            for _ in range(50):
                if (s.name, 1) not in worker._ops:
                    break
                await asyncio.sleep(0.1)
            assert (s.name, 1) not in worker._ops and ops[1].done
            assert worker._ops[(s.name, 0)] is ops[0] and not ops[0].held
            # and comes back: a new operator claims it again
            await worker._on_revoked(None, [tp for tp in tps if tp.partition != slot_1])
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


_REBALANCE = re.compile(r"\brevoked\b|\bassigned \d+ slots")


def test_a_query_registered_and_deleted_rebalances_nothing(
    query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    s, other = query_setup(4), query_setup(4)
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=300, keys=40,
                      seed=22, lateness=2)  # fmt: skip
    second = make_workload(name=other.name, topics=other.topics, output=other.output, partitions=4,
                           per_stream=100, keys=40, seed=23, lateness=2)  # fmt: skip
    workers = {n: JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix, name=n)
               for n in ("w1", "w2")}  # fmt: skip
    third = len(w.items) // 3
    marks: dict[str, int] = {}

    async def scenario() -> tuple[list[Any], list[Event]]:
        for worker in workers.values():
            worker.start()
        await register_query(redis_server, s.prefix, w.query_json)
        await wait_running(redis_server, s.prefix, s.name, 4)
        await wait_everyone_holds(workers)  # the group settled with both: the first query on both
        events = await asyncio.to_thread(produce, kafka_broker, s.topics, w.items[:third])
        await asyncio.sleep(3)
        marks.update({n: worker.log_path.stat().st_size for n, worker in workers.items()})
        await register_query(redis_server, s.prefix, _own_streams(second.query_json))
        await wait_running(redis_server, s.prefix, other.name, 4)
        events += await asyncio.to_thread(produce, kafka_broker, s.topics, w.items[third : 2 * third])
        async with RegistryStore(redis_server, prefix=s.prefix) as registry:
            await registry.delete_query(other.name)
        for _ in range(100):
            if all(f"query {other.name} deleted" in log_slice(wk, marks[n]) for n, wk in workers.items()):
                break
            await asyncio.sleep(0.1)
        events += await asyncio.to_thread(produce, kafka_broker, s.topics, w.items[2 * third :])
        want = sum(expected_ids(w.query, events).values())
        return await consume_output(kafka_broker, s.output, want=want, timeout_s=60), events

    try:
        records, events = asyncio.run(scenario())
        since = {n: log_slice(worker, marks[n]) for n, worker in workers.items()}
    finally:
        for worker in workers.values():
            worker.stop()
    for name, text in since.items():
        assert f"query {other.name} deleted" in text, (name, text[-3000:])
        assert not _REBALANCE.findall(text), (name, _REBALANCE.findall(text))
        assert not claims(text, s.name), (name, claims(text, s.name))  # the first query's: never again
    assert {n for n, text in since.items() if claims(text, other.name)} == set(workers)  # on both
    want = expected_ids(w.query, events)
    got = Counter(json.loads(r.value)["id"] for r in records)
    assert sum(want.values()) > 50
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"


def _own_streams(query: dict[str, Any]) -> dict[str, Any]:
    """`query` on streams of its own (`a2`, ...): the registry's streams `a`, ... are the first query's."""
    inputs = [{**inp, "stream": f"{inp['stream']}2"} for inp in query["inputs"]]
    where = [[a.replace(".", "2.", 1), op, b.replace(".", "2.", 1)] for a, op, b in query["where"]]
    return {**query, "inputs": inputs, "where": where}
