"""The joiner on a real Redis Cluster (3 primaries, 3 replicas) with `WAIT 1` per commit, against the oracle."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

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

pytestmark = pytest.mark.timeout(180)


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
