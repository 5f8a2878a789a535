"""A real control plane for tests: uvicorn serving `create_app(settings)` in a thread on a free port."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
import redis
import uvicorn

from streamjoin.api import ApiSettings, create_app
from streamjoin.api.metrics_port import listening_sockets
from streamjoin.dev.ports import free_port
from streamjoin.registry import RegistryStore

__all__ = ["REGISTRY_KEY", "TOKEN", "ApiServer", "run", "running_api", "wait_for"]

TOKEN = "test-token-" + uuid.uuid4().hex[:8]
REGISTRY_KEY = "test-registry-key-" + uuid.uuid4().hex
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion from a synchronous test."""
    return asyncio.run(coro)


class ApiServer:
    """A running API: its URL, clients with and without the token, and its registry."""

    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings
        self.url = f"http://{settings.api_host}:{settings.api_port}"
        self.client = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        self.anon = httpx.Client(base_url=self.url, timeout=30)
        self.prefix = settings.api_registry_prefix
        self._redis = redis.Redis.from_url(settings.redis_url, decode_responses=True)

    def store(self) -> RegistryStore:
        """Return a new `RegistryStore` on the API's registry (use inside `run(...)`)."""
        return RegistryStore(self.settings.redis_url, prefix=self.prefix)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call one `RegistryStore` method as a joiner or reader would, and close the store."""

        async def go() -> Any:
            async with self.store() as store:
                return await getattr(store, method)(*args, **kwargs)

        return run(go())

    def dump(self) -> dict[str, Any]:
        """Return every registry key under the API's prefix with its value, to compare before/after."""
        out: dict[str, Any] = {}
        for key in self._redis.scan_iter(match=f"{self.prefix}*"):
            kind = self._redis.type(key)
            if kind == "hash":
                out[key] = self._redis.hgetall(key)
            elif kind == "set":
                out[key] = sorted(self._redis.smembers(key))
            elif kind == "zset":
                out[key] = self._redis.zrange(key, 0, -1)
            else:
                out[key] = self._redis.get(key)
        return out

    def close(self) -> None:
        self.client.close()
        self.anon.close()
        self._redis.close()


@contextmanager
def running_api(settings: ApiSettings) -> Iterator[ApiServer]:
    """Serve the API for `settings` in a background thread until the block ends."""
    config = uvicorn.Config(
        create_app(settings),
        host=settings.api_host,
        port=settings.api_port,
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    sockets = listening_sockets(config, settings)  # as `streamjoin api`: with the metrics port, if set
    thread = threading.Thread(target=server.run, args=(sockets,), name="api-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the API server did not start")
        time.sleep(0.01)
    api = ApiServer(settings)
    try:
        yield api
    finally:
        api.close()
        server.should_exit = True
        thread.join(timeout=10)
        for sock in sockets:
            sock.close()


def api_settings(redis: str, bootstrap: str, **overrides: Any) -> ApiSettings:
    """Return settings for a test API on a free port with its own registry prefix and the test token."""
    values: dict[str, Any] = {
        "redis_url": redis,
        "kafka_bootstrap": bootstrap,
        "api_host": "127.0.0.1",
        "api_port": free_port(),
        "api_token": TOKEN,
        "registry_key": REGISTRY_KEY,
        "api_registry_prefix": f"test-{uuid.uuid4().hex[:10]}:streamjoin:",
        "api_results_timeout_ms": 10_000,
    }
    values.update(overrides)
    return ApiSettings(**values)


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = 90) -> None:
    """Wait until `check()` is true (a connection refused meanwhile counts as not yet: the API or a
    worker may be restarting); fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
