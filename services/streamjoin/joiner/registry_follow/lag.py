"""Readiness follows the registry: a worker that has not applied the registry's latest version within a
bound is not ready (docs/joiner.md, "Readiness").

A worker applies a version when it has taken in that snapshot: stopped the operators of deleted or
redefined queries, dropped their state, and queued the new queries' layouts. A worker busy for
minutes (a teardown of hundreds of topics, a layout holding its lock) would otherwise keep answering
`/readyz` 200 while deleted queries' operators keep running and new queries stay `pending`.

>>> lag = RegistryLag(bound_ms=5_000)
>>> lag.observe(latest=7, applied=7, now_ms=0) is None
True
>>> lag.observe(latest=8, applied=7, now_ms=1_000) is None  # behind, within the bound
True
>>> lag.observe(latest=9, applied=7, now_ms=6_500)
'registry version 9 not applied for 5.5 s (applied 7; bound 5.0 s)'
>>> lag.observe(latest=9, applied=9, now_ms=7_000) is None
True
"""

from __future__ import annotations

import time
from typing import Protocol

from streamjoin.joiner.health import Health

__all__ = ["RegistryLag"]


class _Versioned(Protocol):
    async def version(self) -> int: ...


class RegistryLag:
    """How long the version a worker applied has been behind the registry's."""

    def __init__(self, bound_ms: int) -> None:
        """Report a problem once the worker has been behind for more than `bound_ms`."""
        self.bound_ms = bound_ms
        self._behind_since_ms: int | None = None

    async def check(self, registry: _Versioned, applied: int, health: Health) -> None:
        """Read the registry's version and set (or clear) the `registry-lag` problem of `health`."""
        latest = await registry.version()
        now_ms = int(time.monotonic() * 1000)
        health.set("registry-lag", self.observe(latest=latest, applied=applied, now_ms=now_ms))

    def observe(self, *, latest: int, applied: int, now_ms: int) -> str | None:
        """Return the readiness problem given the registry's `latest` version and the `applied` one."""
        if applied >= latest:
            self._behind_since_ms = None
            return None
        if self._behind_since_ms is None:
            self._behind_since_ms = now_ms
        behind_ms = now_ms - self._behind_since_ms
        if behind_ms <= self.bound_ms:
            return None
        return (
            f"registry version {latest} not applied for {behind_ms / 1000:.1f} s "
            f"(applied {applied}; bound {self.bound_ms / 1000:.1f} s)"
        )
