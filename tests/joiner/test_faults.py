"""Malformed input and a Redis crash mid-run: dead-lettered, counted, nothing lost, nothing doubled."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    produce,
    readiness,
    register_query,
    run_scenario,
    wait_ready,
    wait_running,
)
from tests.registry.redis_process import RestartableRedis

from streamjoin.dev.ports import free_port
from streamjoin.registry import RegistryStore

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

MALFORMED: list[tuple[bytes, str]] = [
    (b"{not json", "not JSON"),
    (b"[1, 2, 3]", "not a JSON object"),
    (b'{"k": 1, "v": 3}', "missing timestamp field 'ts'"),
    (b'{"ts": 5, "v": 3}', "missing join field 'k'"),
]


def test_malformed_records_and_redis_crash(
    query_setup: Callable[[int], QuerySetup],
    make_topic: Callable[..., str],
    kafka_broker: str,
    restartable_redis: RestartableRedis,
    tmp_path: Path,
) -> None:
    s = query_setup(4)
    dead_topic = make_topic("dead", partitions=4)
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=600, keys=40,
                      seed=21, lateness=2)  # fmt: skip
    w.query_json["dead_letter"] = {"topic": dead_topic}
    # Sprinkle malformed records through the first half (each stream and partition gets some).
    items: list[tuple[str, int, Any]] = list(w.items)
    bad = 0
    for i in range(40):
        raw, _ = MALFORMED[i % len(MALFORMED)]
        items.insert(25 * i + 3, ("abc"[i % 3], i % 4, raw))
        bad += 1
    half = len(items) // 2
    ready_port = free_port()
    redis_url = restartable_redis.url
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_url, group=s.group, prefix=s.prefix,
                           extra=["--ready-port", str(ready_port)])  # fmt: skip
    seen_not_ready = False

    async def scenario() -> tuple[Counter[str], list[Any], list[Any], dict[str, Any]]:
        nonlocal seen_not_ready
        await register_query(redis_url, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_url, s.prefix, s.name, 4)
        assert readiness(ready_port) is True
        events = produce(kafka_broker, s.topics, items[:half])
        restartable_redis.crash()
        for _ in range(40):  # the worker notices and reports itself not ready
            await asyncio.sleep(0.1)
            if readiness(ready_port) is False:
                seen_not_ready = True
                break
        events += produce(kafka_broker, s.topics, items[half:])  # produced while Redis is down
        await asyncio.sleep(2)
        restartable_redis.start()
        want = expected_ids(w.query, events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=90, quiet_s=4
        )
        dead = await consume_output(kafka_broker, dead_topic, want=bad, timeout_s=30, quiet_s=2)
        for _ in range(50):  # statistics are refreshed every second
            async with RegistryStore(redis_url, prefix=s.prefix) as registry:
                stats = {st.partition: st.operator for st in await registry.read_stats(s.name)}
            if sum(sum((o.malformed or {}).values()) for o in stats.values()) >= bad:
                break
            await asyncio.sleep(0.2)
        assert readiness(ready_port) is True
        return want, records, dead, stats

    (want, records, dead, stats), _ = run_scenario(joiner, scenario)
    got = Counter(json.loads(r.value)["id"] for r in records)
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert seen_not_ready, "the worker never reported itself not ready while Redis was down"
    assert len(dead) == bad, f"{len(dead)} dead letters for {bad} malformed records"
    reasons = Counter()
    for r in dead:
        headers = dict(r.headers)
        assert headers["query"].decode() == s.name and headers["source-topic"].decode() in s.topics.values()
        reasons[next(why for raw, why in MALFORMED if raw == r.value)] += 1
        assert headers["reason"].decode().startswith(("not JSON", "not a JSON object", "missing"))
    assert sum(reasons.values()) == bad
    assert sum(sum((o.malformed or {}).values()) for o in stats.values()) == bad


def test_redis_paused_mid_run(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    restartable_redis: RestartableRedis,
    tmp_path: Path,
) -> None:
    """Redis stops answering for 10 s (longer than the 5 s command timeout): commits time out, and a
    commit Redis had queued may still be applied when it wakes up, after the worker gave up on it.
    The worker is not ready meanwhile, recovers from what Redis holds, and loses and doubles nothing."""
    s = query_setup(4)
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=600, keys=40,
                      seed=27, lateness=2)  # fmt: skip
    half = len(w.items) // 2
    ready_port = free_port()
    redis_url = restartable_redis.url
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_url, group=s.group, prefix=s.prefix,
                           extra=["--ready-port", str(ready_port)])  # fmt: skip
    seen_not_ready = False

    async def scenario() -> tuple[Counter[str], list[Any]]:
        nonlocal seen_not_ready
        await register_query(redis_url, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_url, s.prefix, s.name, 4)
        assert readiness(ready_port) is True
        events = produce(kafka_broker, s.topics, w.items[:half])
        await consume_output(kafka_broker, s.output, want=1, timeout_s=30, quiet_s=0)
        restartable_redis.pause()
        try:
            events += produce(kafka_broker, s.topics, w.items[half:])  # arrives while Redis hangs
            for _ in range(50):
                await asyncio.sleep(0.2)
                if readiness(ready_port) is False:
                    seen_not_ready = True
        finally:
            restartable_redis.resume()
        want = expected_ids(w.query, events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=120, quiet_s=4
        )
        assert await wait_ready(ready_port), "the worker did not become ready again"
        return want, records

    (want, records), _ = run_scenario(joiner, scenario)
    got = Counter(json.loads(r.value)["id"] for r in records)
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert seen_not_ready, "the worker stayed ready while Redis answered nothing for 10 s"
