"""Readiness: Redis answers a PING and holds the registry (its epoch); the broker answers.

The `registry` check also names the log records this process's restores refused (docs/registry.md,
"Authentication"): they do not make the control plane unready, since a refused record changes
nothing, but an operator must see them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from streamjoin.api.schemas import Readiness, ReadinessCheck
from streamjoin.kafka import reader
from streamjoin.registry import RefusalReason, RegistryStore, RegistryUnavailableError

__all__ = ["HealthService"]


class HealthService:
    """Check the control plane's dependencies, each within `timeout_ms`."""

    def __init__(
        self,
        store: RegistryStore,
        bootstrap: str,
        timeout_ms: int,
        *,
        kafka_options: Mapping[str, Any] | None = None,
        refused: Mapping[RefusalReason, int] | None = None,
    ) -> None:
        """Check `store`'s Redis and the broker at `bootstrap` (with `kafka_options`, as `ResultService`);
        `refused`: the log records the restores refused, by reason (`RegistryGuard.refused`)."""
        self._refused = dict(refused or {})
        self._store = store
        self._bootstrap = bootstrap
        self._options = dict(kafka_options or {})
        self._timeout = timeout_ms / 1000

    async def readiness(self) -> Readiness:
        """Run every check concurrently; ready when all pass."""
        checks = await asyncio.gather(
            self._check("redis", self._redis),
            self._check("registry", self._registry),
            self._check("kafka", self._kafka),
        )
        return Readiness(ready=all(c.ok for c in checks), checks=list(checks))

    async def _check(self, name: str, probe: Callable[[], Awaitable[str]]) -> ReadinessCheck:
        started = time.monotonic()
        try:
            async with asyncio.timeout(self._timeout):
                detail = await probe()
            ok = True
        except TimeoutError:
            ok, detail = False, f"no answer within {int(self._timeout * 1000)} ms"
        except Exception as exc:  # any failure of a dependency means "not ready", with the reason
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        return ReadinessCheck(
            name=name, ok=ok, detail=detail, latency_ms=int((time.monotonic() - started) * 1000)
        )

    async def _redis(self) -> str:
        await self._store.ping()
        return f"registry version {await self._store.version()}"

    async def _registry(self) -> str:
        epoch = await self._store.epoch()
        if epoch is None:
            raise RegistryUnavailableError("Redis holds no registry: it is being restored from its log")
        counts = ", ".join(f"{reason} {n}" for reason, n in sorted(self._refused.items()) if n)
        refused = f"; log records refused by restores: {counts} (see the log)" if counts else ""
        return f"epoch {epoch}{refused}"

    async def _kafka(self) -> str:
        consumer = reader(self._bootstrap, options=self._options)
        try:
            await consumer.start()
            topics = await consumer.topics()
        finally:
            with contextlib.suppress(Exception):
                await consumer.stop()
        return f"{len(topics)} topics"
