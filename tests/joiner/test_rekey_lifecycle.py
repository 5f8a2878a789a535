"""Re-keyed inputs' internal topics live and die with their query (issue 16): deleted with it, replaced
when a redefinition changes how an input is re-keyed, and deleted by the next worker to start when the
query went while none ran. Each output is still the brute-force oracle's, exactly once."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.joiner.harness import (
    JoinerProcess,
    consume_output,
    produce,
    register_query,
    run_scenario,
    wait_running,
)
from tests.joiner.test_rekey import _compare, _ids, _workload

from streamjoin.query import parse_query
from streamjoin.query.partitioning import partition_for, repartition_topic
from streamjoin.registry import QueryRecord, RegistryStore, StreamRecord
from streamjoin.topics import broker_topics

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def test_internal_topics_and_positions_go_with_the_query(
    make_topic: Callable[..., str], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    topics = {s: make_topic(f"rk.{s}", partitions=2) for s in "ab"}
    output = make_topic("rk.out", partitions=2)
    name = f"rk{random.randrange(10**8)}"
    prefix = f"t{name}:"
    query = {
        "name": name,
        "inputs": [
            {"stream": "a", "topic": topics["a"], "timestamp": "ts", "key": "k", "window": {"range": 60}},
            {"stream": "b", "topic": topics["b"], "timestamp": "ts", "window": {"range": 60}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": output},
    }
    internal = repartition_topic(name, "b")
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=f"g-{name}", prefix=prefix)

    async def scenario() -> tuple[bool, bool, int, int]:
        await register_query(redis_server, prefix, query)
        joiner.start()
        await wait_running(redis_server, prefix, name, 2)
        created = internal in broker_topics(kafka_broker)
        redis = Redis.from_url(redis_server)
        positions = len([k async for k in redis.scan_iter(match=f"{prefix}*repart*")])
        async with RegistryStore(redis_server, prefix=prefix) as registry:
            await registry.delete_query(name)
        deadline = asyncio.get_running_loop().time() + 30
        while internal in broker_topics(kafka_broker) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.5)
        await asyncio.sleep(8)  # long enough for a resubscription that would recreate it
        left = len([k async for k in redis.scan_iter(match=f"{prefix}*repart*")])
        await redis.aclose()
        return created, internal in broker_topics(kafka_broker), positions, left

    (created, still_there, positions, left), _ = run_scenario(joiner, scenario)
    # All or nothing: a (keyed) is re-keyed with b, so one repartitioner per source partition of each.
    assert created and positions == 4
    assert not still_there and left == 0


def _redefine(
    make_topic: Callable[..., str],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
    counts: Mapping[str, int],
    keys: Mapping[str, str | None],
    attributes: tuple[str, str],
    placement: Mapping[str, Callable[[dict[str, Any]], int]],
) -> tuple[set[str], Counter[str], Counter[str], dict[str, int], list[bytes], Any]:
    """Register a join of a and b on `attributes[0]`, produce half the records, replace it (as a
    PUT does) by one on `attributes[1]` with another output topic, produce the rest; return the
    internal topics before, the new definition's expected and produced ids, the internal topics
    after (with their partition counts), the Redis keys of repartitioners left, and the new plan."""
    topics = {s: make_topic(f"rk.{s}", partitions=n) for s, n in counts.items()}
    outputs = [make_topic("rk.out", partitions=max(counts.values())) for _ in range(2)]
    name = f"rk{random.randrange(10**8)}"
    prefix = f"t{name}:"

    def definition(attribute: str, output: str) -> dict[str, Any]:
        inputs = [{"stream": s, "topic": topics[s], "timestamp": "ts", "window": {"range": 60}} for s in "ab"]
        for i in inputs:
            if keys[i["stream"]] is not None:
                i["key"] = keys[i["stream"]]
        where = [[f"a.{attribute}", "=", f"b.{attribute}"]]
        return {"name": name, "inputs": inputs, "where": where, "output": {"topic": output}}

    first, second = (
        {**definition(attribute, output), "lateness": 3, "start": "earliest"}
        for attribute, output in zip(attributes, outputs, strict=True)
    )
    fields = {s: ("k", "x") for s in "ab"}
    w = _workload(second, fields, placement, counts, per_stream=300, values=15, seed=9, lateness=3)
    internal = {repartition_topic(name, s) for s in "ab"}
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=f"g-{name}", prefix=prefix)
    half = len(w.items) // 2

    async def scenario() -> tuple[set[str], Counter[str], Counter[str], dict[str, int], list[bytes], Any]:
        await register_query(redis_server, prefix, first)
        joiner.start()
        await wait_running(redis_server, prefix, name, 1, timeout_s=90)
        created = internal & set(broker_topics(kafka_broker))
        events = await asyncio.to_thread(produce, kafka_broker, topics, w.items[:half])
        async with RegistryStore(redis_server, prefix=prefix) as registry:
            record = await registry.get_query(name)
            assert record is not None
            streams = [StreamRecord(name=s, topic=topics[s], timestamp="ts", key=keys[s]) for s in "ab"]
            new = QueryRecord.of(parse_query(second), at=time.time())
            await registry.replace_query(new, streams=streams, expected_revision=record.revision)
            events += await asyncio.to_thread(produce, kafka_broker, topics, w.items[half:])
            want = _ids(w, events)
            records = await consume_output(kafka_broker, outputs[1], want=sum(want.values()), timeout_s=120)
            plan = await registry.read_plan(name)
        partitioning = getattr(plan, "partitioning", None) if plan is not None else None
        used = {r.internal_topic for r in partitioning.rekeyed} if partitioning is not None else set()
        deadline = asyncio.get_running_loop().time() + 30
        while (internal - used) & set(broker_topics(kafka_broker)):
            if asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(3)  # a lagging read or write would recreate them now
        redis = Redis.from_url(redis_server)
        positions = [k async for k in redis.scan_iter(match=f"{prefix}*repart*")]
        await redis.aclose()
        after = {t: n for t, n in broker_topics(kafka_broker).items() if t in internal}
        got = Counter(json.loads(r.value)["id"] for r in records)
        return created, want, got, after, positions, partitioning

    result, _ = run_scenario(joiner, scenario)
    return result


def test_a_redefinition_that_stops_re_keying_runs_the_new_query_and_deletes_the_internal_topics(
    make_topic: Callable[..., str], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    """Issue 16: a PUT changing which inputs are re-keyed (both, then none) takes effect: the new
    definition's output equals its oracle over every record, the internal topics and the
    repartitioners' positions go, and none comes back."""
    placement = {s: (lambda r: partition_for(r["k"], 2)) for s in "ab"}  # producers key by k
    created, want, got, after, positions, partitioning = _redefine(
        make_topic, kafka_broker, redis_server, tmp_path, dict.fromkeys("ab", 2), dict.fromkeys("ab", "k"),
        ("x", "k"), placement,
    )  # fmt: skip
    assert len(created) == 2, "the first definition re-keys both inputs through internal topics"
    assert sum(want.values()) > 100
    _compare(want, got)
    assert partitioning is not None and not partitioning.rekeyed, partitioning
    assert after == {} and positions == []


def test_a_redefinition_that_re_keys_to_another_partition_count_replaces_the_internal_topics(
    make_topic: Callable[..., str], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    """A PUT whose plan re-keys the same inputs to another N (2, then 4): the internal topics left
    with 2 partitions are deleted and created again with 4, and the new definition's output equals
    its oracle; only the new incarnation's positions remain."""
    rng = random.Random(5)
    placement = {"a": lambda r: partition_for(r["k"], 2), "b": lambda r: rng.randrange(4)}
    created, want, got, after, positions, partitioning = _redefine(
        make_topic, kafka_broker, redis_server, tmp_path, {"a": 2, "b": 4}, {"a": "k", "b": None},
        ("k", "x"), placement,
    )  # fmt: skip
    assert len(created) == 2
    assert sum(want.values()) > 100
    _compare(want, got)
    assert partitioning is not None and partitioning.partitions == 4 and len(partitioning.rekeyed) == 2
    assert set(after.values()) == {4} and len(after) == 2
    assert len(positions) == 2 + 4  # one per source partition of a and of b, this incarnation's only


def test_a_query_deleted_while_no_worker_runs_loses_its_internal_topics_when_one_starts(
    make_topic: Callable[..., str], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    """The deletion of internal topics survives crashes: the worker is SIGKILLed, the query deleted
    while none runs, and the next worker to start finds the topics in the ledger and deletes them."""
    topics = {s: make_topic(f"rk.{s}", partitions=2) for s in "ab"}
    output = make_topic("rk.out", partitions=2)
    name = f"rk{random.randrange(10**8)}"
    prefix = f"t{name}:"
    query = {
        "name": name,
        "inputs": [
            {"stream": s, "topic": topics[s], "timestamp": "ts", "window": {"range": 60}} for s in "ab"
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": output},
    }
    internal = {repartition_topic(name, s) for s in "ab"}
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=f"g-{name}", prefix=prefix)

    async def scenario() -> tuple[bool, set[str], list[bytes]]:
        await register_query(redis_server, prefix, query)
        joiner.start()
        await wait_running(redis_server, prefix, name, 2, timeout_s=90)
        created = internal <= set(broker_topics(kafka_broker))
        joiner.kill()
        async with RegistryStore(redis_server, prefix=prefix) as registry:
            await registry.delete_query(name)
        await asyncio.sleep(2)
        joiner.start()
        deadline = asyncio.get_running_loop().time() + 60
        while internal & set(broker_topics(kafka_broker)) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.5)
        await asyncio.sleep(1)
        redis = Redis.from_url(redis_server)
        left = [k async for k in redis.scan_iter(match=f"{prefix}*repart*")]
        left += [k async for k in redis.scan_iter(match=f"{prefix}internal-topics")]
        await redis.aclose()
        return created, internal & set(broker_topics(kafka_broker)), left

    (created, still_there, left), _ = run_scenario(joiner, scenario)
    assert created
    assert not still_there and left == []
