"""A quiet query joins everything it holds: the idle timeout releases the tail (docs/queries.md).

Real broker, Redis and joiner worker. The inputs stop at different timestamps and nothing follows
them (no far-future record moves the watermark). Once every input has been idle for the timeout,
the watermark goes to the largest newest timestamp, so every result of the oracle is published.
Before, it stopped at the newest timestamp of the last input to go idle, and the results younger
than that waited for new input for good: golab5 of bench/peers ended 12 results short that way.
"""

from __future__ import annotations

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
from streamjoin.testing import Event

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

_IDLE_MS = 2_000
# Each input's timestamps (ms, one key): c stops first and, read in the same fetch as the others,
# is the last input the worker marks idle (it marks them in query order), so the old rule left
# every result younger than c's newest record (59) waiting.
_TIMESTAMPS = {"a": range(0, 100, 3), "b": range(1, 95, 3), "c": range(2, 60, 3)}


def _query(s: QuerySetup) -> dict[str, Any]:
    inputs = [
        {"stream": x, "topic": s.topics[x], "timestamp": "ts", "key": "k", "window": {"range": 20}}
        for x in "abc"
    ]
    return {
        "name": s.name,
        "inputs": inputs,
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "output": {"topic": s.output},
        "start": "earliest",
    }


def test_every_input_idle_publishes_every_result(
    query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    s = query_setup(1)
    query = _query(s)
    items = [(x, 0, {"ts": ts, "k": 1}) for x, tss in _TIMESTAMPS.items() for ts in tss]
    joiner = JoinerProcess(
        tmp_path,
        kafka_broker,
        redis_server,
        group=s.group,
        prefix=s.prefix,
        extra=["--idle-timeout-ms", str(_IDLE_MS)],
    )

    async def scenario() -> tuple[list[Event], Counter[str], Counter[str]]:
        # Everything is in the topics before the query starts, so one fetch reads all of it.
        events = produce(kafka_broker, s.topics, items)
        want = expected_ids(parse_query(query), events)
        await register_query(redis_server, s.prefix, query)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 1)
        records = await consume_output(kafka_broker, s.output, want=sum(want.values()), timeout_s=60)
        return events, want, Counter(json.loads(r.value)["id"] for r in records)

    (events, want, got), code = run_scenario(joiner, scenario)
    ts_of = {f"{s.topics[e.stream]}:{e.partition}:{e.offset}": e.ts for e in events}
    youngest = [max(ts_of[part] for part in i.split("|")) for i in want]
    assert len(youngest) > 100, "the workload should have a fair number of results"
    assert sum(ts > max(_TIMESTAMPS["c"]) for ts in youngest) > 20, "and some younger than c's newest"
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert code == 0, f"the worker did not exit cleanly on SIGTERM (code {code})\n{joiner.log_tail()}"
