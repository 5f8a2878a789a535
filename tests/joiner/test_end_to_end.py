"""End to end: random workloads through the real broker, Redis and a joiner worker, against the oracle."""

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
    make_workload,
    produce,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.joiner.publish.outbox import parse_sequence_header

pytestmark = pytest.mark.timeout(180)

MODES: dict[str, dict[str, Any]] = {
    "eager": {"evaluation": {"mode": "eager"}, "expiration": {"mode": "eager"}},
    "lazy": {"evaluation": {"mode": "lazy", "every": 25}, "expiration": {"mode": "lazy", "every": 50}},
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_joiner_matches_oracle(
    mode: str, query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    s = query_setup(4)
    w = make_workload(
        name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=400, keys=30, seed=7,
        lateness=3, **MODES[mode],
    )  # fmt: skip
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)

    async def scenario() -> tuple[Counter[str], Counter[str], list[Any]]:
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 4)
        events = produce(kafka_broker, s.topics, w.items)
        want = expected_ids(w.query, events)
        records = await consume_output(kafka_broker, s.output, want=sum(want.values()), timeout_s=60)
        got = Counter(json.loads(r.value)["id"] for r in records)
        return want, got, records

    (want, got, records), code = run_scenario(joiner, scenario)
    assert sum(want.values()) > 200, "the workload should produce a fair number of results"
    assert got == want, (
        f"missing {sum((want - got).values())}, extra {sum((got - want).values())}\n{joiner.log_tail()}"
    )
    assert code == 0, f"the worker did not exit cleanly on SIGTERM (code {code})\n{joiner.log_tail()}"
    # Output records: docs/queries.md, "The output record", keyed by the first join attribute, on partition p.
    sample = json.loads(records[0].value)
    assert set(sample) == {"query", "ts", "tuples", "id"} and set(sample["tuples"]) == {"a", "b", "c"}
    # Numbered 1, 2, ... per partition without gaps; the operator owns its output partition, so only
    # the last record of each publish carries `sj-seq` (docs/exactly-once.md, step 5).
    position: Counter[int] = Counter()
    last_marked: dict[int, bool] = {}
    for r in records:
        value = json.loads(r.value)
        headers = dict(r.headers)
        assert r.key == json.dumps(value["tuples"]["a"]["k"]).encode()
        assert value["tuples"]["a"]["k"] % 4 == r.partition
        assert set(headers) <= {"sj-seq"}  # the id is a field of the value; nothing else is sent
        position[r.partition] += 1
        last_marked[r.partition] = "sj-seq" in headers
        if "sj-seq" in headers:
            origin = parse_sequence_header(headers["sj-seq"])
            assert origin == (s.name.encode(), r.partition, position[r.partition])
    assert all(last_marked.values()), "the last record of every publish carries its sequence number"
