"""A partition with records the worker has not read yet is never idle (docs/joiner.md, "Idle partitions").

Real broker, Redis and joiner worker; an idle timeout of a few milliseconds, far shorter than the
worker takes to read its backlog. Input `a` holds a backlog of large records: a fetch brings about
125 of them (1 MiB per partition), so the worker reads them a few batches at a time and, between
two fetches, runs batches of `b` alone while `a` still has a thousand records unread. Input `b`'s
small records run three times faster in event time. A partition flagged idle after silence alone
let `b` carry the watermark past `a`'s unread records, which were then counted late and missed
their results; a partition idle only once its position is at the end offset the broker reported
holds the watermark until its backlog is read. Every result of the oracle must be published, and
no record counted late.

The re-keyed case reads the same inputs unkeyed from two partitions: between two fetches of `a`,
the repartitioner of its source partition writes nothing, and the operator's source partition is
silent while the repartitioner still has records to re-key. It is idle only once the repartitioner
is at the source's end and the operator has read what it wrote.
"""

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
    produce,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.query import parse_query
from streamjoin.registry import RegistryStore
from streamjoin.testing import late_events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

_IDLE_MS = 5
"""Shorter than any fetch of a backlog's next megabyte: before, every gap between two fetches of `a`
made it idle."""
_RECORDS = 1_500
"""Of each input; `a`'s are 8 KB each, so its backlog is 12 fetches. (Few large records rather than
many small ones: the brute-force oracle's time grows with the square of the records.)"""
_KEYS = 4
_PAD = "x" * 8_000


def _query(s: QuerySetup, *, rekeyed: bool) -> dict[str, Any]:
    key = {} if rekeyed else {"key": "k"}
    return {
        "name": s.name,
        "inputs": [
            {"stream": x, "topic": s.topics[x], "timestamp": "ts", **key, "window": {"range": 30}}
            for x in "ab"
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": s.output},
        "start": "earliest",
    }


@pytest.mark.parametrize("rekeyed", [False, True], ids=["direct", "rekeyed"])
def test_a_partition_with_a_backlog_holds_the_watermark_until_it_is_read(
    rekeyed: bool,
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
) -> None:
    partitions = 2 if rekeyed else 1
    s = query_setup(partitions)
    query_json = _query(s, rekeyed=rekeyed)
    query = parse_query(query_json)
    a = [("a", i % partitions, {"ts": i, "k": i % _KEYS, "pad": _PAD}) for i in range(_RECORDS)]
    b = [("b", i % partitions, {"ts": 3 * i, "k": i % _KEYS}) for i in range(_RECORDS)]
    joiner = JoinerProcess(
        tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix,
        extra=["--idle-timeout-ms", str(_IDLE_MS), "--max-batch", "200"],
    )  # fmt: skip

    async def scenario() -> tuple[Counter[str], Counter[str], int]:
        # Both backlogs are in the topics before the query starts.
        events = await asyncio.to_thread(produce, kafka_broker, s.topics, [*a, *b])
        assert not late_events(query, events), "the workload itself has no late record"
        want = expected_ids(query, events, rekeyed=rekeyed)
        await register_query(redis_server, s.prefix, query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, partitions, timeout_s=60)
        records = await consume_output(kafka_broker, s.output, want=sum(want.values()), timeout_s=45)
        got = Counter(json.loads(r.value)["id"] for r in records)
        return want, got, await _late(redis_server, s.prefix, s.name)

    (want, got, late), code = run_scenario(joiner, scenario)
    assert sum(want.values()) > 5_000, "the workload should have a fair number of results"
    assert late == 0, f"{late} records counted late\n{joiner.log_tail()}"
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert code == 0, f"the worker did not exit cleanly on SIGTERM (code {code})\n{joiner.log_tail()}"


async def _late(redis_url: str, prefix: str, query: str) -> int:
    """Return the records the Control Table counts late (statistics are written every second)."""
    await asyncio.sleep(1.5)
    async with RegistryStore(redis_url, prefix=prefix) as registry:
        stats = await registry.read_stats(query)
    assert stats, "the operator wrote no statistics"
    return sum(st.operator.late or 0 for st in stats)
