"""Re-keyed inputs end to end (issue 16): producers that do not key records by the join attribute.

Four-partition input topics written by unkeyed producers (records spread at random) and by
producers keyed with random keys unrelated to the join fields; two workers, one SIGKILLed mid-run
and restarted. Two queries: a 3-way join on different attributes (a.x = b.x AND b.y = c.y: no
attribute covers every input, so the single-partition plan), and a join on a shared attribute with
one input of 8 partitions. The output must equal the brute-force oracle over everything produced,
exactly once. Range windows only: rows windows of a re-keyed input count per (source partition,
internal partition), which the oracle does not model (`tests/joiner/test_rekey_units.py` covers it).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.joiner.harness import (
    JoinerProcess,
    Workload,
    consume_output,
    produce,
    register_query,
    wait_running,
)

from streamjoin.query.partitioning import partition_for
from streamjoin.registry import RegistryStore
from streamjoin.testing import Event, expected_results, late_events

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def _ids(w: Workload, events: list[Event]) -> Counter[str]:
    """Return the ids of every result the oracle expects over all partitions at once."""
    query = w.query
    assert not late_events(query, events), "the workload must not make late records"
    topics = [i.topic for i in query.inputs]
    return Counter(
        {
            "|".join(f"{topics[i]}:{part}:{off}" for i, (part, off) in enumerate(key)): n
            for key, n in expected_results(query, events).items()
        }
    )


def _workload(
    query: dict[str, Any],
    fields: Mapping[str, tuple[str, ...]],
    placement: Mapping[str, Callable[[dict[str, Any]], int]],
    counts: Mapping[str, int],
    *,
    per_stream: int,
    values: int,
    seed: int,
    lateness: int,
) -> Workload:
    """Records of `fields` per stream with one global clock (disorder up to `lateness`), placed by
    `placement`; each source partition ends with a far-future record that joins nothing."""
    rng = random.Random(seed)
    w = Workload(query)
    clock = 0
    streams = list(fields)
    for n in range(per_stream * len(streams)):
        stream = rng.choice(streams)
        clock += rng.randint(0, 2)
        record: dict[str, Any] = {"ts": max(clock - rng.randint(0, lateness), 0), "n": n}
        for f in fields[stream]:
            record[f] = rng.randrange(values)
        w.items.append((stream, placement[stream](record), record))
    for stream in streams:
        for p in range(counts[stream]):
            base = 10**6 * (streams.index(stream) + 1)  # distinct per stream: joins nothing
            far = {"ts": clock + 1_000_000, "n": -1, **dict.fromkeys(fields[stream], base + p)}
            w.items.append((stream, p, far))
    return w


def _run(
    tmp_path: Path,
    kafka_broker: str,
    redis_server: str,
    prefix: str,
    group: str,
    w: Workload,
    output: str,
    partitions: int,
) -> tuple[Counter[str], Counter[str], dict[str, Any] | None]:
    topics = {i.stream: i.topic for i in w.query.inputs}
    name = w.query.name
    first = JoinerProcess(tmp_path, kafka_broker, redis_server, group=group, prefix=prefix, name="w1")
    second = JoinerProcess(tmp_path, kafka_broker, redis_server, group=group, prefix=prefix, name="w2")
    half = len(w.items) // 2

    async def scenario() -> tuple[Counter[str], Counter[str], dict[str, Any] | None]:
        await register_query(redis_server, prefix, w.query_json)
        first.start()
        second.start()
        async with RegistryStore(redis_server, prefix=prefix) as registry:
            await wait_running(redis_server, prefix, name, partitions, timeout_s=90)
            events = await asyncio.to_thread(produce, kafka_broker, topics, w.items[:half])
            await asyncio.sleep(1.5)
            second.kill()  # its operators and repartitioners move to w1 after the session timeout
            events += await asyncio.to_thread(produce, kafka_broker, topics, w.items[half : half + half // 2])
            await asyncio.sleep(7)
            second.start()  # and some come back when it rejoins
            events += await asyncio.to_thread(produce, kafka_broker, topics, w.items[half + half // 2 :])
            want = _ids(w, events)
            records = await consume_output(
                kafka_broker, output, want=sum(want.values()), timeout_s=150, quiet_s=5
            )
            plan = await registry.read_plan(name)
        got = Counter(json.loads(r.value)["id"] for r in records)
        partitioning = getattr(plan, "partitioning", None) if plan is not None else None
        return want, got, partitioning.to_json() if partitioning is not None else None

    try:
        return asyncio.run(scenario())
    except Exception as exc:
        raise AssertionError(
            f"{exc}\n--- w1 ---\n{first.log_tail()}\n--- w2 ---\n{second.log_tail()}"
        ) from exc
    finally:
        first.stop()
        second.stop()


def _compare(want: Counter[str], got: Counter[str]) -> None:
    dups = sum(n - 1 for n in got.values() if n > 1)
    assert got == want, (
        f"missing {sum((want - got).values())}, extra {sum((got - want).values())}, duplicates {dups}"
    )


def test_different_attributes_single_partition_exactly_once(
    make_topic: Callable[..., str], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    topics = {s: make_topic(f"rk.{s}", partitions=4) for s in "abc"}
    output = make_topic("rk.out", partitions=4)
    name = f"rk{random.randrange(10**8)}"
    query = {
        "name": name,
        "inputs": [
            {"stream": "a", "topic": topics["a"], "timestamp": "ts", "window": {"range": 60}},
            {"stream": "b", "topic": topics["b"], "timestamp": "ts", "window": {"range": 50}},
            {"stream": "c", "topic": topics["c"], "timestamp": "ts", "window": {"range": 40}},
        ],
        "where": [["a.x", "=", "b.x"], ["b.y", "=", "c.y"]],
        "output": {"topic": output},
        "lateness": 3,
        "start": "earliest",
    }
    rng = random.Random(3)
    robin = iter(range(10**9))
    placement = {
        "a": lambda r: rng.randrange(4),  # unkeyed: spread at random
        "b": lambda r: partition_for(rng.randrange(10**6), 4),  # keyed by something unrelated
        "c": lambda r: next(robin) % 4,  # unkeyed: round robin
    }
    fields = {"a": ("x",), "b": ("x", "y"), "c": ("y",)}
    w = _workload(
        query, fields, placement, dict.fromkeys("abc", 4), per_stream=400, values=20, seed=7, lateness=3
    )
    want, got, partitioning = _run(
        tmp_path, kafka_broker, redis_server, f"t{name}:", f"g-{name}", w, output, 1
    )
    assert sum(want.values()) > 300
    _compare(want, got)
    assert partitioning is not None, "the worker did not publish the partitioning plan"
    assert partitioning["single_partition"] and partitioning["partitions"] == 1
    assert {r["stream"] for r in partitioning["repartitioned"]} == {"a", "b", "c"}


def test_shared_attribute_with_other_partition_count_exactly_once(
    make_topic: Callable[..., str], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    counts = {"a": 4, "b": 8, "c": 4}
    topics = {s: make_topic(f"rk.{s}", partitions=n) for s, n in counts.items()}
    output = make_topic("rk.out", partitions=8)
    name = f"rk{random.randrange(10**8)}"
    query = {
        "name": name,
        "inputs": [
            {"stream": "a", "topic": topics["a"], "timestamp": "ts", "key": "k", "window": {"range": 60}},
            {"stream": "b", "topic": topics["b"], "timestamp": "ts", "key": "k", "window": {"range": 50}},
            {"stream": "c", "topic": topics["c"], "timestamp": "ts", "window": {"range": 40}},
        ],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": output},
        "lateness": 3,
        "start": "earliest",
    }
    rng = random.Random(4)
    placement = {
        "a": lambda r: partition_for(r["k"], 4),  # keyed by k (Kafka's default partitioner), 4 partitions
        "b": lambda r: partition_for(r["k"], 8),  # keyed by k, 8 partitions: the query runs on 8
        "c": lambda r: partition_for(rng.randrange(10**6), 4),  # random keys unrelated to k
    }
    fields = {s: ("k",) for s in "abc"}
    w = _workload(query, fields, placement, counts, per_stream=400, values=20, seed=8, lateness=3)
    want, got, partitioning = _run(
        tmp_path, kafka_broker, redis_server, f"t{name}:", f"g-{name}", w, output, 8
    )
    assert sum(want.values()) > 300
    _compare(want, got)
    assert partitioning is not None, "the worker did not publish the partitioning plan"
    assert partitioning["partitions"] == 8 and not partitioning["single_partition"]
    reasons = {r["stream"]: r["reason"] for r in partitioning["repartitioned"]}
    assert reasons == {  # all or nothing: b, keyed with 8 partitions, is re-keyed with the others
        "a": "4 partitions, the query runs on 8",
        "b": "re-keyed with the others: a has 4 partitions, the query runs on 8",
        "c": "not keyed (no key declared)",
    }
