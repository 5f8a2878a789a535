"""Readiness follows the registry: a worker that has not applied the registry's latest version within
its bound answers `/readyz` 503 naming the versions, and is ready again once it caught up. A real
worker (in this process, so the test can keep it busy), the real broker and Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import make_workload, readyz, register_query, wait_running

from streamjoin.dev.ports import free_port
from streamjoin.joiner import JoinerWorker, WorkerConfig
from streamjoin.settings import load_settings

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow, pytest.mark.integration]


async def _until(port: int, ready: bool, timeout_s: float) -> dict[str, Any]:
    """Poll `/readyz` until it says `ready`; return its body."""
    body: dict[str, Any] = {}
    for _ in range(int(timeout_s * 10)):
        status, body = await asyncio.to_thread(readyz, port)
        if (status == 200) is ready:
            return body
        await asyncio.sleep(0.1)
    raise AssertionError(f"/readyz never said ready={ready}: {body}")


def test_a_worker_behind_the_registry_is_not_ready(
    query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str
) -> None:
    s = query_setup(2)
    first = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=2, per_stream=1,
                          keys=2, seed=1)  # fmt: skip
    second = {**first.query_json, "name": f"{s.name}-2", "output": {"topic": f"{s.output}-2"}}
    port = free_port()
    settings = load_settings(kafka_bootstrap=kafka_broker, redis_url=redis_server)
    config = WorkerConfig(worker_id="w-lag", group=s.group, prefix=s.prefix, ready_port=port,
                          registry_lag_ms=2_000)  # fmt: skip
    worker = JoinerWorker(settings, config)

    async def scenario() -> None:
        run = asyncio.create_task(worker.run())
        try:
            await register_query(redis_server, s.prefix, first.query_json)
            await _until(port, ready=True, timeout_s=60)
            await wait_running(redis_server, s.prefix, s.name, 2)
            # The worker is busy with a long step that holds its lock (what laying out a flood of
            # queries one by one did): the registry moves on without it.
            async with worker._lock:
                await register_query(redis_server, s.prefix, second)
                body = await _until(port, ready=False, timeout_s=15)
                lag = body["problems"]["registry-lag"]
                assert "not applied" in lag and "bound 2.0 s" in lag, body
            await _until(port, ready=True, timeout_s=30)  # caught up: ready again
            await wait_running(redis_server, s.prefix, second["name"], 2)
        finally:
            worker.request_stop()
            await asyncio.wait_for(run, 30)

    asyncio.run(scenario())
