"""The registry store against the real embedded Redis: catalog writes, atomicity, runtime state, watch."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from streamjoin.engine import JoinPlan
from streamjoin.query import ModeDef, parse_query
from streamjoin.registry import (
    AlreadyExistsError,
    ConcurrentChangeError,
    InUseError,
    LatencyHistogram,
    NotFoundError,
    OperatorStats,
    QueryControls,
    QueryRecord,
    RegistryStore,
    StreamRecord,
    WindowStats,
    query_status,
)

pytestmark = pytest.mark.anyio

A = StreamRecord("a", "net.a", "ts")
B = StreamRecord("b", "net.b", "ts", schema={"type": "object", "properties": {"ts": {}, "src": {}}})


def _definition(name: str = "flows") -> dict[str, Any]:
    return {
        "name": name,
        "inputs": [
            {"stream": "a", "topic": "net.a", "timestamp": "ts", "window": {"range": 100}},
            {"stream": "b", "topic": "net.b", "timestamp": "ts", "window": {"rows": 50}},
        ],
        "where": [["a.src", "=", "b.src"]],
        "output": {"topic": "flows.out"},
        "evaluation": {"mode": "lazy", "every": 10},
    }


def _query(name: str = "flows") -> QueryRecord:
    return QueryRecord.of(parse_query(_definition(name)), at=1.0)


async def _raw_keys(store: RegistryStore) -> dict[str, Any]:
    """Dump every key under the store's prefix (type-aware), to compare before and after."""
    r = store._redis
    out: dict[str, Any] = {}
    async for key in r.scan_iter(match=f"{store.keys.prefix}*"):
        kind = await r.type(key)
        if kind == "hash":
            out[key] = await r.hgetall(key)
        elif kind == "set":
            out[key] = sorted(await r.smembers(key))
        elif kind == "zset":
            out[key] = await r.zrange(key, 0, -1)
        else:
            out[key] = await r.get(key)
    return out


async def test_streams_round_trip_and_version(registry: RegistryStore) -> None:
    assert await registry.version() == 0
    assert await registry.create_stream(A) == 1
    assert await registry.create_stream(B) == 2
    assert await registry.get_stream("b") == B
    assert await registry.list_streams() == [A, B]
    assert await registry.get_stream("zz") is None
    raw = json.loads((await registry._redis.hget(registry.keys.streams, "a")) or "{}")
    assert {"name", "topic", "timestamp", "schema"} <= set(raw)


async def test_refused_writes_change_nothing(registry: RegistryStore) -> None:
    await registry.create_stream(A)
    await registry.create_stream(B)
    await registry.create_query(_query(), streams=[A, B])
    before = await _raw_keys(registry)
    with pytest.raises(AlreadyExistsError):
        await registry.create_stream(A)
    with pytest.raises(AlreadyExistsError):
        await registry.create_query(_query(), streams=[A, B])
    with pytest.raises(InUseError) as in_use:
        await registry.delete_stream("a")
    assert in_use.value.users == ("flows",)
    with pytest.raises(NotFoundError):
        await registry.delete_query("nope")
    with pytest.raises(NotFoundError):
        await registry.create_query(_query("q2"), streams=[A, StreamRecord("c", "net.c", None)])
    with pytest.raises(ConcurrentChangeError):  # validated against a stream that has since changed
        await registry.create_query(_query("q3"), streams=[A, StreamRecord("b", "other", "ts")])
    with pytest.raises(ConcurrentChangeError):
        await registry.set_controls("flows", {"paused": True}, expected_revision=7)
    with pytest.raises(ValueError, match="not writable"):
        await registry.set_controls("flows", {"algorithm": "nlj"})
    assert await _raw_keys(registry) == before


async def test_query_lifecycle(registry: RegistryStore) -> None:
    await registry.create_stream(A)
    await registry.create_stream(B)
    version = await registry.create_query(_query(), streams=[A, B])
    stored = await registry.get_query("flows")
    assert stored is not None
    assert stored.query == parse_query(_definition())
    assert stored.controls.evaluation == ModeDef("lazy", 10)
    assert stored.controls.order == "auto" and not stored.controls.paused

    controls, v2 = await registry.set_controls("flows", {"paused": True, "order": ["b", "a"]})
    assert v2 == version + 1
    assert controls.paused and controls.order == ("b", "a")
    effective = (await registry.get_query("flows")).effective()  # type: ignore[union-attr]
    assert effective.order == ("b", "a") and effective.evaluation.mode == "lazy"

    new_def = _definition()
    new_def["inputs"][0]["window"] = {"range": 500}
    await registry.write_plan("flows", JoinPlan.from_global(["a", "b"]))
    replaced, v3 = await registry.replace_query(
        QueryRecord(parse_query(new_def), None, QueryControls(), 0.0, 2.0),
        streams=[A, B],
        expected_revision=1,
    )
    assert v3 == v2 + 1 and replaced.revision == 2 and replaced.created_at == 1.0
    assert replaced.controls.paused and replaced.controls.order == "auto"  # paused kept, order reset
    assert await registry.read_plan("flows") is None  # the joiners plan the new definition afresh

    request = await registry.request_replan("flows")
    assert await registry.pending_replan("flows") == request
    assert not await registry.clear_replan("flows", "other-id")
    assert await registry.clear_replan("flows", request)
    assert await registry.pending_replan("flows") is None

    snapshot = await registry.snapshot()
    assert list(snapshot.queries) == ["flows"] and list(snapshot.streams) == ["a", "b"]
    assert snapshot.version == await registry.version()

    await registry.write_stats("flows", 0, OperatorStats(results=1), {"a": WindowStats(records=2)})
    await registry.set_status("flows", 0, worker="w1", state="running")
    await registry.delete_query("flows")
    assert await registry.get_query("flows") is None
    assert await registry.read_stats("flows") == []
    assert await registry.read_status("flows") == []
    await registry.delete_stream("a")
    assert [s.name for s in await registry.list_streams()] == ["b"]


async def test_runtime_state(registry: RegistryStore) -> None:
    plan = await registry.write_plan("q", JoinPlan.from_global(["a", "b", "c"], 12.5), statistics={"a": {}})
    assert plan.plan_changes == 0 and plan.estimated_cost == 12.5
    same = await registry.write_plan("q", JoinPlan.from_global(["a", "b", "c"], 13.0))
    assert same.plan_changes == 0 and same.changed_at == plan.changed_at
    changed = await registry.write_plan("q", JoinPlan.from_global(["c", "b", "a"], 9.0))
    assert changed.plan_changes == 1
    assert await registry.read_plan("q") == changed
    assert changed.to_join_plan().local_orders["a"] == ("a", "c", "b")

    histogram = LatencyHistogram()
    histogram.observe(0.02, 3)
    operator = OperatorStats(results=5, latency_seconds=histogram.as_json())
    await registry.write_stats("q", 1, operator, {"a": WindowStats(records=3, bytes=90)})
    await registry.write_stats("q", 0, OperatorStats(results=1), {"a": WindowStats(records=1)})
    stats = await registry.read_stats("q")
    assert [s.partition for s in stats] == [0, 1]
    assert stats[1].operator.results == 5 and stats[1].streams["a"].bytes == 90
    with pytest.raises(ValueError):
        await registry.write_stats("q", 0, OperatorStats(), {"operator": WindowStats()})

    await registry.set_status("q", 0, worker="w1", state="running", partitions=2, version=4)
    statuses = await registry.read_status("q")
    assert query_status(QueryControls(), statuses) == "positioning"
    await registry.set_status("q", 1, worker="w2", state="running", partitions=2)
    statuses = await registry.read_status("q")
    assert query_status(QueryControls(), statuses) == "running" and statuses[0].version == 4
    await registry.clear_status("q", 1)
    assert len(await registry.read_status("q")) == 1

    await registry.heartbeat("w1", pid=42, partitions={"q": [1, 0]}, started_at=1.0, ttl_ms=10_000)
    await registry.heartbeat("w2", pid=43, partitions={}, started_at=1.0, ttl_ms=1)
    await asyncio.sleep(0.05)
    workers = await registry.workers()
    assert [w.worker for w in workers] == ["w1"] and workers[0].partitions == {"q": (0, 1)}
    await registry.remove_worker("w1")
    assert await registry.workers() == []


async def test_watch_yields_each_new_version(registry: RegistryStore) -> None:
    seen: list[int] = []

    async def follow() -> None:
        async for version in registry.watch(poll_interval_ms=5_000):  # pub/sub, not polling
            seen.append(version)
            if version >= 2:
                return

    task = asyncio.create_task(follow())
    await asyncio.sleep(0.2)
    await registry.create_stream(A)
    await asyncio.sleep(0.2)
    await registry.create_stream(B)
    await asyncio.wait_for(task, timeout=5)
    assert seen == [0, 1, 2]


async def test_watch_polls_when_a_message_is_missed(registry: RegistryStore) -> None:
    gen = registry.watch(poll_interval_ms=100)
    assert await anext(gen) == 0
    await registry._redis.incr(registry.keys.version)  # a change nobody announced
    assert await asyncio.wait_for(anext(gen), timeout=5) == 1
    await gen.aclose()
