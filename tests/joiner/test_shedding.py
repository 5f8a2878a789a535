"""Shedding in the live joiner: a runtime budget change, and exactly once under SIGKILL, with a range
or a count window (whose shed records keep their place in the count across checkpoints).

The joiner's output is compared with the same engine run in process over the records as produced
(one operator per partition, as `OperatorFactory.build(partition)` makes them): the shedding
decisions of a deterministic policy (`simp`) do not depend on how records were fetched, batched or
checkpointed, so the two must be equal as multisets, and a sub-multiset of the exact result.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    ChunkedProducer,
    JoinerProcess,
    Workload,
    consume_output,
    expected_ids,
    make_workload,
    produce,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.engine import MultiJoin
from streamjoin.query import QueryDef
from streamjoin.registry import RegistryStore
from streamjoin.testing import Event

pytestmark = [pytest.mark.timeout(300)]

PARTITIONS = 2


# `b`'s window: a range window, or the workload's count window (its shed records keep their place).
B_WINDOWS = {"range": {"range": 30}, "rows": {"rows": 5}}


def _shedding_workload(
    s: QuerySetup, memory: int, per_stream: int, seed: int, b_window: str = "range"
) -> Workload:
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=PARTITIONS,
                      per_stream=per_stream, keys=6, seed=seed, lateness=2)  # fmt: skip
    w.query_json["inputs"][1]["window"] = B_WINDOWS[b_window]
    w.query_json["shedding"] = {"memory": memory, "policy": "simp", "importance": "imp", "combine": "sum"}
    for _, _, record in w.items:
        record["imp"] = 1 + record["n"] % 7 if record["n"] > 0 else 1
    return w


def _in_process(
    query: QueryDef, events: Sequence[Event], budget_at: tuple[int, int] | None = None
) -> Counter[str]:
    """Return the ids the engine produces per partition; `budget_at`: (events fed, new memory)."""
    topics = [i.topic for i in query.inputs]
    ids: Counter[str] = Counter()
    for p in range(PARTITIONS):
        engine = MultiJoin(query, partitions={s: [p] for s in query.stream_names})
        results = []
        for n, e in enumerate(events):
            if budget_at is not None and n == budget_at[0]:
                results.extend(engine.advance())
                engine.set_shedding_memory(budget_at[1])
            if e.partition == p:
                engine.add(e.stream, e.record, ts=e.ts, partition=p, offset=e.offset)
        results.extend(engine.advance())  # the joiner never ends its input: no `finish`
        for r in results:
            ids["|".join(f"{topics[x.input]}:{x.partition}:{x.offset}" for x in r)] += 1
    return ids


def _ids(records: list[Any]) -> Counter[str]:
    return Counter(json.loads(r.value)["id"] for r in records)


@pytest.mark.parametrize("b_window", sorted(B_WINDOWS))
def test_budget_change_at_runtime_takes_effect_without_losing_state(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
    b_window: str,
) -> None:
    s = query_setup(PARTITIONS)
    w = _shedding_workload(s, memory=600, per_stream=200, seed=31, b_window=b_window)  # 600: none shed
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)
    half = len(w.items) // 2

    async def scenario() -> tuple[list[Event], list[Any], Counter[str], list[Any]]:
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, PARTITIONS)
        first = produce(kafka_broker, s.topics, w.items[:half])
        want_first = _in_process(w.query, first)
        early = await consume_output(kafka_broker, s.output, want=sum(want_first.values()), timeout_s=60)
        async with RegistryStore(redis_server, prefix=s.prefix) as registry:
            await registry.set_controls(s.name, {"shedding_memory": 6})
        await asyncio.sleep(1)
        await wait_running(redis_server, s.prefix, s.name, PARTITIONS)
        events = first + produce(kafka_broker, s.topics, w.items[half:])
        want = _in_process(w.query, events, budget_at=(len(first), 6))
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=90, quiet_s=3
        )
        return events, early, want, records

    (events, early, want, records), _ = run_scenario(joiner, scenario)
    exact = expected_ids(w.query, events)
    got = _ids(records)
    assert early and all(json.loads(r.value)["id"] in exact for r in early)
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert not got - exact  # a sub-multiset of the exact result
    assert sum(exact.values()) - sum(got.values()) > 50, "the smaller budget should shed results"
    assert all("importance" in json.loads(r.value) for r in records)


@pytest.mark.slow
@pytest.mark.parametrize("b_window", sorted(B_WINDOWS))
def test_sigkill_with_shedding_gives_the_no_crash_output(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
    b_window: str,
) -> None:
    s = query_setup(PARTITIONS)
    w = _shedding_workload(s, memory=12, per_stream=400, seed=32, b_window=b_window)
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)
    rng = random.Random(7)
    kills = 0

    async def scenario() -> tuple[list[Event], Counter[str], list[Any]]:
        nonlocal kills
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, PARTITIONS)
        producer = ChunkedProducer(kafka_broker, s.topics, w, chunks=8, pause_s=1.0)
        producer.start()
        while kills < 4:
            await asyncio.sleep(rng.uniform(0.3, 2.5))
            joiner.kill()
            kills += 1
            joiner.start()
        producer.join(timeout=120)
        assert producer.error is None and not producer.is_alive()
        want = _in_process(w.query, producer.events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=120, quiet_s=4
        )
        return producer.events, want, records

    (events, want, records), _ = run_scenario(joiner, scenario)
    got = _ids(records)
    exact = expected_ids(w.query, events)
    assert kills >= 4 and sum(want.values()) > 100
    assert got == want, (
        f"missing {sum((want - got).values())}, extra {sum((got - want).values())}\n{joiner.log_tail()}"
    )
    assert not got - exact and sum(got.values()) < sum(exact.values())
