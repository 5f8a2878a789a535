"""A record dated far ahead, read first after a worker restarted, is still a dead letter (live:
real broker, Redis and joiner worker; docs/reliability.md, "Records far ahead").

Unkeyed 4-partition inputs, so the inputs are re-keyed: a repartitioner per source partition decides
what its progress markers carry, and every operator holds the watermark per source partition. A
first burst goes through one worker, which then stops cleanly; while it is down, partition 0 of `a`
receives a record 30 days ahead; a worker starts again from the checkpoints, then a second burst
(partition 0 of `a` 3 s after the others) and one flush record per stream and partition (100 s
ahead, joining nothing) follow. The far record must
be dead-lettered once and every result of the oracle published exactly once. A restarted reader
used to bound nothing until a partition had shown two records: the far record was taken, its source
partition's clock jumped past every later record, and that partition's records came late.
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

from streamjoin.query import parse_query
from streamjoin.testing import late_events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

_DAY_MS = 86_400_000
_T0 = 1_790_000_000_000
_PARTITIONS = 4
_Item = tuple[str, int, dict[str, Any]]


def test_a_far_ahead_first_record_after_a_restart_is_a_dead_letter(
    query_setup: Callable[[int], QuerySetup],
    make_topic: Callable[..., str],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
) -> None:
    s = query_setup(_PARTITIONS)
    dead_topic = make_topic("dead", partitions=_PARTITIONS)
    query_json = {
        "name": s.name,
        "inputs": [
            {"stream": x, "topic": s.topics[x], "timestamp": "ts", "window": {"range": 1_000}} for x in "ab"
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": s.output},
        "dead_letter": {"topic": dead_topic},
    }
    query = parse_query(query_json)
    rng = random.Random(5)
    first = unkeyed_burst(rng, _T0, 400, _PARTITIONS, "ab")
    ahead: _Item = ("a", 0, {"ts": first[-1][2]["ts"] + 30 * _DAY_MS, "k": 3, "n": -1})
    second = unkeyed_burst(rng, first[-1][2]["ts"] + 100, 400, _PARTITIONS, "ab")
    flush = [(x, p, {"ts": second[-1][2]["ts"] + 100_000, "k": 1_000 + 10 * i + p, "n": -2})
             for i, x in enumerate("ab") for p in range(_PARTITIONS)]  # fmt: skip
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)

    async def scenario() -> tuple[Counter[str], Counter[str], int]:
        await register_query(redis_server, s.prefix, query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, _PARTITIONS, timeout_s=90)
        events = await asyncio.to_thread(produce, kafka_broker, s.topics, first)
        half = sum(expected_ids(query, events, rekeyed=True).values()) // 2
        await consume_output(kafka_broker, s.output, want=half, timeout_s=60, quiet_s=1)  # committed
        assert joiner.stop() == 0, f"the worker did not stop cleanly\n{joiner.log_tail()}"
        await asyncio.to_thread(produce, kafka_broker, s.topics, [ahead])
        joiner.start()
        # Read alone in the first batches after the restart; refused, it is a dead letter at once.
        letters = await consume_output(kafka_broker, dead_topic, want=1, timeout_s=60, quiet_s=0)
        # Partition 0 of `a` comes last, as a repartitioner behind the others would deliver it: it
        # holds the watermark back meanwhile, unless its clock was moved past its records.
        behind = [item for item in second if item[:2] == ("a", 0)]
        events += await asyncio.to_thread(
            produce, kafka_broker, s.topics, [i for i in second if i not in behind]
        )
        await asyncio.sleep(3)
        events += await asyncio.to_thread(produce, kafka_broker, s.topics, behind + flush)
        want = expected_ids(query, events, rekeyed=True)
        assert not late_events(query, events), "the workload must not make late records"
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=90, quiet_s=3
        )
        return want, Counter(json.loads(r.value)["id"] for r in records), len(letters)

    (want, got, letters), code = run_scenario(joiner, scenario)
    assert sum(want.values()) > 1_000
    missing, extra = sum((want - got).values()), sum((got - want).values())
    assert (letters, missing, extra) == (1, 0, 0), (
        f"{letters} dead letters (want the far-ahead record's), {missing} results missing of"
        f" {sum(want.values())}, {extra} extra\n{joiner.log_tail()}"
    )
    assert code == 0
