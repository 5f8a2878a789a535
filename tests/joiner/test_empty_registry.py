"""A joiner started with an empty registry picks up a query registered after it is ready."""

from __future__ import annotations

import asyncio
import json
import time
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
    readyz,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.dev.ports import free_port

pytestmark = pytest.mark.timeout(180)


def _wait_ready(port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    answer: tuple[int, dict[str, object]] = (0, {})
    while time.monotonic() < deadline:
        answer = readyz(port)
        if answer[0] == 200:
            return
        time.sleep(0.2)
    raise AssertionError(f"the worker never became ready: {answer}")


def test_query_registered_after_start_runs(
    query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    s = query_setup(2)
    w = make_workload(
        name=s.name, topics=s.topics, output=s.output, partitions=2, per_stream=150, keys=20, seed=3
    )  # fmt: skip
    port = free_port()
    joiner = JoinerProcess(
        tmp_path,
        kafka_broker,
        redis_server,
        group=s.group,
        prefix=s.prefix,
        extra=["--ready-port", str(port)],
    )

    async def scenario() -> tuple[Counter[str], Counter[str]]:
        joiner.start()
        await asyncio.to_thread(_wait_ready, port)
        await asyncio.sleep(2)  # past the group's first rebalance (on the slots topic)
        status, body = readyz(port)
        assert status == 200, body
        await register_query(redis_server, s.prefix, w.query_json)
        await wait_running(redis_server, s.prefix, s.name, 2)
        events = produce(kafka_broker, s.topics, w.items)
        want = expected_ids(w.query, events)
        records = await consume_output(kafka_broker, s.output, want=sum(want.values()), timeout_s=60)
        return want, Counter(json.loads(r.value)["id"] for r in records)

    (want, got), code = run_scenario(joiner, scenario)
    log = joiner.log_tail(400)
    assert sum(want.values()) > 50
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}\n{log}"
    assert code == 0, f"the worker did not exit cleanly on SIGTERM (code {code})\n{log}"
    assert "Traceback" not in log and "force_metadata_update" not in log, log
