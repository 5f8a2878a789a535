"""`RegistryStore`: the one client of the registry in Redis (docs/registry.md).

The control plane registers streams and queries and writes controls; joiners watch for changes and
publish plans, statistics, status and heartbeats. Every registry change is validated by the caller,
checked again under WATCH, and written in one MULTI that also increments `streamjoin:version`; the
new version is then published on `streamjoin:changes`. A refused write changes nothing. With a log
(`streamjoin.registry.log`), stream and query changes are appended to it first, and `restore`
rebuilds a registry that Redis lost.

Usage (a joiner)::

    async with RegistryStore.from_settings(settings) as registry:
        async for version in registry.watch():
            snapshot = await registry.snapshot()
            ...  # start, reconfigure or stop queries to match snapshot.queries
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any

from streamjoin.client_security import redis_options
from streamjoin.registry.catalog import CatalogOps
from streamjoin.registry.keys import DEFAULT_PREFIX, RegistryKeys
from streamjoin.registry.log import RegistryLog
from streamjoin.registry.restore import RestoreOps
from streamjoin.registry.runtime import RuntimeOps
from streamjoin.registry.signing import LogSigner
from streamjoin.settings import Settings
from streamjoin.state.base import StateUnavailableError
from streamjoin.state.redis.connect import connect, guard, is_cluster_url
from streamjoin.state.redis.eviction import eviction_problem

__all__ = ["RegistryStore"]

_log = logging.getLogger(__name__)


class RegistryStore(CatalogOps, RuntimeOps, RestoreOps):
    """Read and write the registry over `redis.asyncio`; see the module docstring."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        timeout_ms: int = 5_000,
        connection: Mapping[str, Any] | None = None,
        log: RegistryLog | None = None,
        cluster: bool = False,
        signer: LogSigner | None = None,
    ) -> None:
        """Create the client for `url` (nothing connects until the first command).

        Args:
            url: the Redis URL (`STREAMJOIN_REDIS_URL`).
            prefix: the key prefix; tests use a unique one per test to share one Redis.
            timeout_ms: socket connect and read timeout.
            connection: more keyword arguments of `Redis.from_url`, e.g. the TLS options of
                `streamjoin.client_security.redis_options`.
            log: the registry's durable log (the control plane's `KafkaRegistryLog`): stream and
                query changes are appended to it before Redis, reads refuse a Redis that lost the
                registry, and `restore` rebuilds it. None (joiners, tests, tools): Redis only.
            cluster: treat a `redis://` URL as a node of a Redis Cluster (`redis+cluster://` is
                one); every registry key then carries the hash tag `{registry}` (one slot).
            signer: signs what is appended to `log` and authenticates what `restore` reads
                (`STREAMJOIN_REGISTRY_KEY`); None: the log is not authenticated.
        """
        cluster = cluster or is_cluster_url(url)
        client = connect(
            url,
            cluster=cluster,
            decode_responses=True,
            socket_timeout=timeout_ms / 1000,
            socket_connect_timeout=timeout_ms / 1000,
            health_check_interval=30,
            **(connection or {}),
        )
        super().__init__(client, RegistryKeys(prefix, slot_tag="registry" if cluster else ""), log, signer)
        self.url = url

    @classmethod
    def from_settings(cls, settings: Settings, **options: Any) -> RegistryStore:
        """Create the client of `settings.redis_url` with its TLS options (`STREAMJOIN_REDIS_TLS_CA_FILE`)
        and the log's key (`STREAMJOIN_REGISTRY_KEY`); `options` are `__init__`'s keyword arguments."""
        options.setdefault("signer", LogSigner.from_settings(settings))
        return cls(
            settings.redis_url, connection=redis_options(settings), cluster=settings.redis_cluster, **options
        )

    @property
    def keys(self) -> RegistryKeys:
        """Return the key layout in use."""
        return self._keys

    async def __aenter__(self) -> RegistryStore:
        """Return the store; the connection pool opens lazily."""
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the client."""
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client and its connection pool."""
        await self._redis.aclose()

    async def ping(self) -> bool:
        """Return whether Redis answers."""
        return bool(await self._redis.ping())

    async def eviction_problem(self) -> str | None:
        """Return why this Redis may evict the registry's keys (`state.redis.eviction`); None if it
        never evicts, or if it cannot be asked now (the workers ask again before they run anything)."""
        try:
            return await guard(lambda: eviction_problem(self._redis))
        except StateUnavailableError:
            return None

    async def watch(self, *, poll_interval_ms: int = 1_000) -> AsyncIterator[int]:
        """Yield the current version at once, then each newer version as it appears.

        Changes arrive by pub/sub on `streamjoin:changes`; the version is also polled every
        `poll_interval_ms`, so a lost message (or a Redis restart) only delays. Several changes in
        quick succession may be reported once, with the latest version.
        """
        last = await self.version()
        yield last
        pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self._keys.changes)
            while True:
                deadline = time.monotonic() + poll_interval_ms / 1000
                while (left := deadline - time.monotonic()) > 0:
                    if await pubsub.get_message(timeout=left) is not None:
                        break
                current = await self.version()
                if current != last:
                    last = current
                    yield current
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]  # unannotated in redis-py
