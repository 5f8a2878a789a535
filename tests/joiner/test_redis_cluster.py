"""The joiner on a real Redis Cluster (3 primaries, 3 replicas), `WAIT 1` per commit, against the oracle."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from redis.crc import key_slot
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
)

from streamjoin.dev.redis_cluster import ClusterNode, EmbeddedRedisCluster
from streamjoin.state.redis import StateKeys

pytestmark = pytest.mark.timeout(240)


def test_joiner_on_a_redis_cluster_matches_oracle(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    redis_cluster: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STREAMJOIN_REDIS_COMMIT_REPLICAS", "1")  # the worker subprocess inherits it
    s = query_setup(4)
    w = make_workload(
        name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=300, keys=30, seed=11,
        lateness=3, evaluation={"mode": "eager"}, expiration={"mode": "eager"},
    )  # fmt: skip
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_cluster, group=s.group, prefix=s.prefix)

    async def scenario() -> tuple[Counter[str], Counter[str]]:
        await register_query(redis_cluster, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_cluster, s.prefix, s.name, 4)
        events = produce(kafka_broker, s.topics, w.items)
        want = expected_ids(w.query, events)
        records = await consume_output(kafka_broker, s.output, want=sum(want.values()), timeout_s=60)
        return want, Counter(json.loads(r.value)["id"] for r in records)

    (want, got), code = run_scenario(joiner, scenario)
    assert sum(want.values()) > 100, "the workload should produce a fair number of results"
    assert got == want, (
        f"missing {sum((want - got).values())}, extra {sum((got - want).values())}\n{joiner.log_tail()}"
    )
    assert code == 0, f"the worker did not exit cleanly on SIGTERM (code {code})\n{joiner.log_tail()}"


def test_joiner_through_a_primary_failover_matches_oracle(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A primary holding some partitions' state is killed mid-run, its replica promoted, the killed node
    brought back as a replica: the output still equals the oracle, each result once."""
    monkeypatch.setenv("STREAMJOIN_REDIS_COMMIT_REPLICAS", "1")
    s = query_setup(4)
    w = make_workload(
        name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=300, keys=30, seed=13,
        lateness=3, evaluation={"mode": "eager"}, expiration={"mode": "eager"},
    )  # fmt: skip
    with EmbeddedRedisCluster() as cluster:
        cluster.start(tmp_path / "cluster")
        url = cluster.url
        assert url is not None
        registry_slot = key_slot(b"registry")
        state_slots = {key_slot(StateKeys(s.prefix, s.name, p).meta.encode()) for p in range(4)}
        victim = next(
            n for n in cluster.primaries()
            if not _serves(n, registry_slot) and any(_serves(n, slot) for slot in state_slots)
        )  # fmt: skip
        joiner = JoinerProcess(tmp_path, kafka_broker, url, group=s.group, prefix=s.prefix)
        half = len(w.items) // 2

        async def scenario() -> tuple[Counter[str], Counter[str]]:
            await register_query(url, s.prefix, w.query_json)
            joiner.start()
            await wait_running(url, s.prefix, s.name, 4)
            events = produce(kafka_broker, s.topics, w.items[:half])
            await asyncio.sleep(1.0)
            cluster.kill(victim)
            await asyncio.to_thread(cluster.wait_ok, timeout_ms=30_000)  # its replica took over
            events += produce(kafka_broker, s.topics, w.items[half:])
            await asyncio.sleep(2.0)  # the shard has no replica: its partitions' commits are refused
            await asyncio.to_thread(cluster.restart, victim)  # back, as the new primary's replica
            await asyncio.to_thread(cluster.wait_ok, timeout_ms=30_000)
            want = expected_ids(w.query, events)
            records = await consume_output(kafka_broker, s.output, want=sum(want.values()), timeout_s=90)
            return want, Counter(json.loads(r.value)["id"] for r in records)

        (want, got), _ = run_scenario(joiner, scenario)
    assert sum(want.values()) > 100, "the workload should produce a fair number of results"
    assert got == want, (
        f"missing {sum((want - got).values())}, extra {sum((got - want).values())}\n{joiner.log_tail()}"
    )


def _serves(node: ClusterNode, slot: int) -> bool:
    """Return whether primary `node` owns `slot` (from its own `CLUSTER SLOTS`)."""
    reply = node.call("CLUSTER", "SLOTS")
    assert isinstance(reply, list)
    return any(int(low) <= slot <= int(high) and int(owner[1]) == node.port for low, high, owner, *_ in reply)
