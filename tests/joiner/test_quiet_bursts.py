"""Bursts separated by a quiet gap lose nothing on a live worker (docs/queries.md, "Idle timeout").

Real broker, Redis and joiner worker; unkeyed 4-partition input topics (so the inputs are re-keyed
and every source partition holds the watermark on every operator), the default lateness (0), no
far-future flush record. A producer writes a burst spread over the partitions, stays quiet for
longer than the idle timeout, then writes a second burst. Every result of the oracle must be
published exactly once, those of the first burst before the second begins (the idle flush).
Before, the first partition to speak after the gap moved the watermark on its own and the other
partitions' records of the second burst were dropped as late.

Every source partition of `a` also starts with an old record (8 days old, or a negative
timestamp), which used to have the good records after it refused as "too far in the future", and
the run ends with one record that is really too far ahead: it alone is dead-lettered, and the
Control Table's `malformed` counts it. (One case: a run without the old records proved nothing
this one does not.)
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.joiner.bursts import unkeyed_burst
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    JoinerProcess,
    consume_output,
    expected_ids,
    produce,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.query import QueryDef, parse_query
from streamjoin.registry import RegistryStore
from streamjoin.testing import Event, late_events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

_IDLE_MS = 10_000
"""The worker's idle timeout (the default: 10 times the query's 1 s window). A slow start (the first
records reaching their operator seconds after it started, on a loaded machine) makes no partition
idle early: a partition with unread records is never idle (docs/joiner.md). A gap is 2 timeouts."""
_DAY_MS = 86_400_000
_T0 = 1_790_000_000_000
_Item = tuple[str, int, dict[str, Any]]


def _query(s: QuerySetup, dead_topic: str) -> dict[str, Any]:
    return {
        "name": s.name,
        "inputs": [
            {"stream": x, "topic": s.topics[x], "timestamp": "ts", "window": {"range": 1_000}} for x in "abc"
        ],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": s.output},
        "dead_letter": {"topic": dead_topic},
    }


def _ids(query: QueryDef, events: Sequence[Event]) -> Counter[str]:
    assert not late_events(query, events), "the workload must not make late records"
    return expected_ids(query, events, rekeyed=True)


def test_two_bursts_after_a_quiet_gap_publish_every_result_once(
    query_setup: Callable[[int], QuerySetup],
    make_topic: Callable[..., str],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
) -> None:
    s = query_setup(4)
    dead_topic = make_topic("dead", partitions=4)
    query_json = _query(s, dead_topic)
    query = parse_query(query_json)
    rng = random.Random(11)
    old = [("a", p, {"ts": [_T0 - 8 * _DAY_MS, -5][p % 2], "k": 100 + p, "n": -1}) for p in range(4)]
    first = [*old, *unkeyed_burst(rng, _T0, 300, 4)]
    second = unkeyed_burst(rng, first[-1][2]["ts"] + 45_000, 300, 4)  # 45 s later in event time
    ahead = ("b", 0, {"ts": second[-1][2]["ts"] + 30 * _DAY_MS, "k": 999, "n": -2})
    joiner = JoinerProcess(
        tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix,
        extra=["--idle-timeout-ms", str(_IDLE_MS)],
    )  # fmt: skip

    async def scenario() -> tuple[Counter[str], Counter[str], Counter[str], Counter[str], int, int]:
        await register_query(redis_server, s.prefix, query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 4, timeout_s=90)
        events = await asyncio.to_thread(produce, kafka_broker, s.topics, first)
        quiet_from = time.monotonic()
        want_first = _ids(query, events)
        # The idle flush publishes the first burst's results while the producer is quiet.
        early = await consume_output(kafka_broker, s.output, want=sum(want_first.values()), timeout_s=150)
        await asyncio.sleep(max(0.0, 2 * _IDLE_MS / 1000 - (time.monotonic() - quiet_from)))
        events += await asyncio.to_thread(produce, kafka_broker, s.topics, second)
        await asyncio.to_thread(produce, kafka_broker, s.topics, [ahead])
        want = _ids(query, events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=90, quiet_s=4
        )
        malformed = await _malformed(redis_server, s.prefix, s.name, at_least=1)
        dead = await consume_output(kafka_broker, dead_topic, want=1, timeout_s=10, quiet_s=1)
        got_early = Counter(json.loads(r.value)["id"] for r in early)
        got = Counter(json.loads(r.value)["id"] for r in records)
        return want_first, got_early, want, got, malformed, len(dead)

    (want_first, got_early, want, got, malformed, dead), code = run_scenario(joiner, scenario)
    assert sum(want_first.values()) > 1_000 and sum(want.values()) - sum(want_first.values()) > 1_000
    assert got_early == want_first, (
        f"after the first burst: missing {sum((want_first - got_early).values())}, "
        f"extra {sum((got_early - want_first).values())}\n{joiner.log_tail()}"
    )
    assert got == want, (
        f"missing {sum((want - got).values())} of {sum(want.values())}, extra {sum((got - want).values())}"
        f"\n{joiner.log_tail()}"
    )
    assert (dead, malformed) == (1, 1), "only the record really too far ahead"
    assert code == 0, f"the worker did not exit cleanly on SIGTERM (code {code})\n{joiner.log_tail()}"


async def _malformed(redis_url: str, prefix: str, query: str, *, at_least: int) -> int:
    """Return the malformed records the Control Table counts (statistics are written every second)."""
    total = 0
    for _ in range(30):
        async with RegistryStore(redis_url, prefix=prefix) as registry:
            stats = await registry.read_stats(query)
        total = sum(sum((st.operator.malformed or {}).values()) for st in stats)
        if total >= at_least:
            break
        await asyncio.sleep(0.2)
    await asyncio.sleep(1.2)  # one more refresh: nothing else is counted
    async with RegistryStore(redis_url, prefix=prefix) as registry:
        stats = await registry.read_stats(query)
    return sum(sum((st.operator.malformed or {}).values()) for st in stats)
