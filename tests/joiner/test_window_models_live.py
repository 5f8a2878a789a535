"""A W-join with a strict window through the live joiner, and a runtime switch to `probe_insert`.

The workload's query, rewritten as a W-join: `a` keeps a strict range window, `b` has no window
(bounded by `within` pairs only), `c` keeps its range window. Half the records are joined under eager
expiration; the expiration control is then changed to `probe_insert` through the registry (the
joiner restarts the operator from its checkpoint) and the rest is joined. The output is the oracle's,
exactly once.
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
    make_workload,
    produce,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.registry import RegistryStore

pytestmark = pytest.mark.timeout(180)


def test_a_wjoin_switched_to_probe_insert_at_runtime_keeps_every_result_once(
    query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    s = query_setup(2)
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=2, per_stream=200, keys=10,
                      seed=5, lateness=2)  # fmt: skip
    inputs = w.query_json["inputs"]
    inputs[0] = {**inputs[0], "window": {"range": 60, "strict": True}}
    inputs[1] = {k: v for k, v in inputs[1].items() if k != "window"}
    w.query_json["within"] = [["a", "b", 30], ["b", "c", 20]]
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)
    half = len(w.items) // 2

    async def scenario() -> tuple[Any, list[Any], dict[str, Any]]:
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 2)
        events = produce(kafka_broker, s.topics, w.items[:half])
        await asyncio.sleep(2)
        async with RegistryStore(redis_server, prefix=s.prefix) as registry:
            await registry.set_controls(s.name, {"expiration": {"mode": "probe_insert"}})
            record = await registry.get_query(s.name)
            assert record is not None
            controls = record.controls.as_json()
        events += produce(kafka_broker, s.topics, w.items[half:])
        want = expected_ids(w.query, events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=60, quiet_s=3
        )
        return want, records, controls

    (want, records, controls), _ = run_scenario(joiner, scenario)
    assert controls["expiration"] == {"mode": "probe_insert"}
    got = Counter(json.loads(r.value)["id"] for r in records)
    assert sum(want.values()) > 0
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
