"""A Redis that may evict keys is refused: the worker exits with 78 naming the policy, the API does not
start, and a Redis that never evicts (no limit, or `noeviction`) is accepted. Real Redis servers
(single and cluster), a real worker and a real API."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.api.server import api_settings
from tests.joiner.harness import JoinerProcess
from tests.registry.redis_process import RestartableRedis

from streamjoin.api.config import ConfigurationError
from streamjoin.api.main import create_app
from streamjoin.dev.redis_cluster import EmbeddedRedisCluster
from streamjoin.dev.resp import RespConnection
from streamjoin.joiner.worker.checks import EXIT_MISCONFIGURED
from streamjoin.registry import RegistryStore
from streamjoin.state.redis import RedisStateStore

pytestmark = pytest.mark.integration


@contextmanager
def _memory_policy(host: str, port: int, maxmemory: str, policy: str) -> Iterator[None]:
    """Give one Redis node a memory limit and an eviction policy; restore both afterwards."""
    with RespConnection(host, port, timeout_ms=2_000) as conn:
        before = conn.call("CONFIG", "GET", "maxmemory*")
        assert isinstance(before, list)
        pairs = zip(before[::2], before[1::2], strict=True)
        saved = {name: value for name, value in pairs if isinstance(name, bytes) and isinstance(value, bytes)}
        conn.call("CONFIG", "SET", "maxmemory", maxmemory, "maxmemory-policy", policy)
    try:
        yield
    finally:
        with RespConnection(host, port, timeout_ms=2_000) as conn:
            old_limit, old_policy = saved[b"maxmemory"], saved[b"maxmemory-policy"]
            conn.call("CONFIG", "SET", "maxmemory", old_limit, "maxmemory-policy", old_policy)


async def _problems(url: str) -> tuple[str | None, str | None]:
    store, registry = RedisStateStore(url, prefix="t:"), RegistryStore(url)
    try:
        return await store.eviction_problem(), await registry.eviction_problem()
    finally:
        await store.aclose()
        await registry.aclose()


def test_a_single_redis_that_evicts_is_named_with_its_policy(restartable_redis: RestartableRedis) -> None:
    url, port = restartable_redis.url, restartable_redis.port
    assert asyncio.run(_problems(url)) == (None, None)  # no maxmemory: nothing is ever evicted
    for policy in ("allkeys-lru", "volatile-ttl", "allkeys-random"):
        with _memory_policy("127.0.0.1", port, "100mb", policy):
            state, registry = asyncio.run(_problems(url))
            assert state is not None and f"maxmemory-policy {policy}" in state and f":{port}" in state
            assert registry == state
    with _memory_policy("127.0.0.1", port, "100mb", "noeviction"):
        assert asyncio.run(_problems(url)) == (None, None)
    with _memory_policy("127.0.0.1", port, "0", "allkeys-lru"):
        assert asyncio.run(_problems(url)) == (None, None)


def test_every_primary_of_a_cluster_is_asked(
    redis_cluster_nodes: EmbeddedRedisCluster, redis_cluster: str
) -> None:
    assert asyncio.run(_problems(redis_cluster)) == (None, None)
    named = int(redis_cluster.rsplit(":", 1)[1])
    last = next(n for n in reversed(redis_cluster_nodes.primaries()) if n.port != named)  # not the URL's
    with _memory_policy("127.0.0.1", last.port, "1gb", "allkeys-lfu"):
        state, _ = asyncio.run(_problems(redis_cluster))
    assert (
        state is not None
        and f":{last.port} (maxmemory 1073741824 bytes, maxmemory-policy allkeys-lfu)" in state
    )
    assert asyncio.run(_problems(redis_cluster)) == (None, None)


@pytest.mark.slow
def test_the_worker_and_the_api_refuse_a_redis_that_evicts(
    restartable_redis: RestartableRedis, kafka_broker: str, tmp_path: Path
) -> None:
    with _memory_policy("127.0.0.1", restartable_redis.port, "100mb", "allkeys-lru"):
        worker = JoinerProcess(
            tmp_path, kafka_broker, restartable_redis.url, group=f"evict-{uuid.uuid4().hex[:6]}",
            prefix="evict:", restart_on_stall=False,
        )  # fmt: skip
        worker.start()
        assert worker.process is not None
        code = worker.process.wait_exit(timeout_ms=60_000)
        worker.stop()
        assert code == EXIT_MISCONFIGURED, worker.log_tail()
        assert "cannot start: Redis may evict" in worker.log_tail() and "allkeys-lru" in worker.log_tail()
        app = create_app(api_settings(restartable_redis.url, kafka_broker))
        with pytest.raises(ConfigurationError, match="maxmemory-policy allkeys-lru"), TestClient(app):
            pass
