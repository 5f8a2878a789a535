"""The broker stops answering mid-run (SIGSTOP: a hung or cut-off broker, its connections still
open): the worker reports itself not ready within seconds, and once the broker answers again every
result arrives exactly once.

The test runs its own broker: stopping the session's would stall every other test's clients.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
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

from streamjoin.dev.kafka_broker import KafkaBroker
from streamjoin.dev.ports import free_port
from streamjoin.topics import TopicSpec, create_topics, load_catalog

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow, pytest.mark.alone]

PARTITIONS = 4
PAUSE_S = 8.0
"""Longer than the worker's session timeout (6 s in the harness): the group may rebalance on resume."""


def test_broker_paused_mid_run(redis_server: str, tmp_path: Path) -> None:
    broker = KafkaBroker()
    broker.start(tmp_path)
    assert broker.bootstrap is not None and broker.process is not None and broker.process.pid is not None
    pid, bootstrap = broker.process.pid, broker.bootstrap
    try:
        _scenario(bootstrap, pid, redis_server, tmp_path)
    finally:
        broker.stop()


def _scenario(bootstrap: str, broker_pid: int, redis_url: str, tmp_path: Path) -> None:
    u = uuid.uuid4().hex[:8]
    topics = {s: f"pause.{s}.{u}" for s in "abc"}
    output = f"pause.out.{u}"
    create_topics(bootstrap, load_catalog())  # as the topics job does before any service starts
    specs = [TopicSpec(t, "internal", PARTITIONS) for t in [*topics.values(), output]]
    assert all(r.ok for r in create_topics(bootstrap, specs))
    name, prefix = f"q{u}", f"t{u}:"
    w = make_workload(name=name, topics=topics, output=output, partitions=PARTITIONS, per_stream=500,
                      keys=40, seed=33, lateness=2)  # fmt: skip
    half = len(w.items) // 2
    ready_port = free_port()
    joiner = JoinerProcess(tmp_path, bootstrap, redis_url, group=f"joiner-{u}", prefix=prefix,
                           extra=["--ready-port", str(ready_port)])  # fmt: skip
    not_ready_after: float | None = None

    async def scenario() -> tuple[Counter[str], list[Any]]:
        nonlocal not_ready_after
        await register_query(redis_url, prefix, w.query_json)
        joiner.start()
        await wait_running(redis_url, prefix, name, PARTITIONS)
        assert readiness(ready_port) is True
        events = produce(bootstrap, topics, w.items[:half])
        await consume_output(bootstrap, output, want=1, timeout_s=30, quiet_s=0)  # the join is under way
        os.kill(broker_pid, signal.SIGSTOP)
        try:
            loop = asyncio.get_running_loop()
            paused_at = loop.time()
            while loop.time() - paused_at < PAUSE_S:
                await asyncio.sleep(0.2)
                if not_ready_after is None and readiness(ready_port) is False:
                    not_ready_after = loop.time() - paused_at
        finally:
            os.kill(broker_pid, signal.SIGCONT)
        events += produce(bootstrap, topics, w.items[half:])
        want = expected_ids(w.query, events)
        records = await consume_output(bootstrap, output, want=sum(want.values()), timeout_s=120, quiet_s=4)
        assert await wait_ready(ready_port), "the worker did not become ready again"
        return want, records

    (want, records), _ = run_scenario(joiner, scenario)
    got = Counter(json.loads(r.value)["id"] for r in records)
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert not_ready_after is not None, f"the worker stayed ready through a {PAUSE_S:g} s broker pause"
    assert not_ready_after < 5.0, f"not ready only {not_ready_after:.1f} s into the pause"
