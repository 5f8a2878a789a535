"""Two queries reading the same streams on one worker: one shared window table per topic partition.

Each query's output equals its own oracle, exactly once, with the worker SIGKILLed three times while
records arrive (the queries differ in a window, so the table must keep a record for the longer
one); Redis holds each record once, referenced by every entry of either query that holds it;
deleting one query releases exactly its references.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    ChunkedProducer,
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.query.parse import parse_query
from streamjoin.registry import RegistryStore
from streamjoin.state.redis import StateKeys

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
PARTITIONS = 2


async def _references(
    r: Redis, prefix: str, queries: list[str], topics: list[str]
) -> list[tuple[Counter[tuple[int, int]], Counter[tuple[int, int]]]]:
    """Return per topic, over every partition and from one atomic snapshot: (references in the
    topic's table, entries of `queries` holding each of its records), keyed by (partition, offset)."""
    async with r.pipeline(transaction=True) as pipe:
        for p in range(PARTITIONS):
            for q in queries:
                k = StateKeys(prefix, q, p)
                pipe.hget(k.meta, "topics")
                pipe.hkeys(k.records)
            for topic in topics:
                pipe.hkeys(StateKeys(prefix, "", p).table(topic))
                pipe.hgetall(StateKeys(prefix, "", p).table_counts(topic))
        replies = iter(await pipe.execute())
    out = {t: (Counter[tuple[int, int]](), Counter[tuple[int, int]]()) for t in topics}
    for p in range(PARTITIONS):
        for _ in queries:
            inputs = json.loads(next(replies) or b"[]")
            for field in next(replies):
                index, offset = (int(x) for x in field.split(b":"))
                out[inputs[index]][1][(p, offset)] += 1
        for topic in topics:
            records, counts = next(replies), next(replies)  # no count: one holder
            assert set(counts) <= set(records)
            for offset in records:
                out[topic][0][(p, int(offset))] = int(counts.get(offset, 1))
    return list(out.values())


async def _wait_table_statistics(
    r: Redis, redis_url: str, prefix: str, queries: list[str], topics: dict[str, str]
) -> None:
    """Wait until every query's statistics show, per stream and partition, the size of the shared
    table of the stream's topic (records, records held more than once); they refresh every second."""
    last: dict[str, Any] = {}
    async with RegistryStore(redis_url, prefix=prefix) as registry:
        for _ in range(50):
            shown: dict[tuple[str, int, str], tuple[Any, Any]] = {}
            actual: dict[tuple[str, int, str], tuple[Any, Any]] = {}
            for q in queries:
                for st in await registry.read_stats(q):
                    for stream, topic in topics.items():
                        window = st.streams.get(stream)
                        shown[(q, st.partition, stream)] = (
                            window.table_records if window else None,
                            window.table_shared if window else None,
                        )
                        k = StateKeys(prefix, "", st.partition)
                        actual[(q, st.partition, stream)] = (
                            await r.hlen(k.table(topic)),
                            await r.hlen(k.table_counts(topic)),
                        )
            if len(shown) == len(queries) * PARTITIONS * len(topics) and shown == actual:
                return
            last = {"shown": shown, "actual": actual}
            await asyncio.sleep(0.2)
    raise AssertionError(f"the statistics never showed the shared tables' sizes: {last}")


def test_queries_of_one_stream_share_its_window_table(
    query_setup: Callable[[int], QuerySetup],
    make_topic: Callable[..., str],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
) -> None:
    s = query_setup(PARTITIONS)
    w = make_workload(
        name=s.name, topics=s.topics, output=s.output, partitions=PARTITIONS, per_stream=300, keys=20, seed=11
    )
    second = dict(
        w.query_json, name=f"{s.name}-short", output={"topic": make_topic("out", partitions=PARTITIONS)}
    )
    second["inputs"] = [dict(i) for i in w.query_json["inputs"]]
    second["inputs"][0]["window"] = {"range": 25}  # a: 60 in the first query
    queries = [w.query_json, second]
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)
    rng = random.Random(3)

    async def scenario() -> list[tuple[Counter[tuple[int, int]], Counter[tuple[int, int]]]]:
        for q in queries:
            await register_query(redis_server, s.prefix, q)
        joiner.start()
        for q in queries:
            await wait_running(redis_server, s.prefix, q["name"], PARTITIONS)
        # The worker is SIGKILLed while records arrive: references come back from Redis with the
        # entries, never counted twice or lost.
        producer = ChunkedProducer(kafka_broker, s.topics, w, chunks=8, pause_s=1.0)
        producer.start()
        for _ in range(3):
            await asyncio.sleep(rng.uniform(0.5, 2.5))
            joiner.kill()
            joiner.start()
        producer.join(timeout=120)
        assert producer.error is None and not producer.is_alive()
        for q in queries:
            want = expected_ids(parse_query(q), producer.events)
            records = await consume_output(
                kafka_broker, q["output"]["topic"], want=sum(want.values()), timeout_s=120, quiet_s=4
            )
            got = Counter(json.loads(r.value)["id"] for r in records)
            assert sum(want.values()) > 100
            assert got == want, (
                f"{q['name']}: missing {sum((want - got).values())}, extra {sum((got - want).values())}"
            )
        r = Redis.from_url(redis_server)
        try:
            names = [q["name"] for q in queries]
            topics = list(s.topics.values())
            before = await _references(r, s.prefix, names, topics)
            await _wait_table_statistics(r, redis_server, s.prefix, names, s.topics)
            async with RegistryStore(redis_server, prefix=s.prefix) as registry:
                await registry.delete_query(second["name"])
            for _ in range(100):  # the worker drops the deleted query's state
                keys = [k.decode() async for k in r.scan_iter(match=f"{s.prefix}*")]
                if not any(StateKeys.partition_of(s.prefix, second["name"], k) is not None for k in keys):
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the deleted query's state is still there")
            after = await _references(r, s.prefix, names[:1], topics)
        finally:
            await r.aclose()
        return [*before, *after]

    states, code = run_scenario(joiner, scenario)
    assert code == 0, joiner.log_tail()
    before, after = states[:3], states[3:]
    for refs, held in before:
        assert refs == held  # every entry of either query is one reference, nothing else is
    # b's rows window and the final far-future records are in both queries' windows: shared once
    assert sum(1 for refs, _ in before for n in refs.values() if n == 2) >= PARTITIONS * 3
    for refs, held in after:
        assert refs == held and held and max(held.values()) == 1
