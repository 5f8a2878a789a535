"""The shared core of `RegistryStore`: the client, the keys, and the atomic "check, then write" step."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError
from redis.typing import EncodableT, FieldT

from streamjoin.registry.errors import ConcurrentChangeError
from streamjoin.registry.keys import RegistryKeys

__all__ = ["Prepare", "StoreBase", "Writes", "as_fields", "text", "text_hash", "texts"]

_log = logging.getLogger(__name__)
_RETRIES = 20

Writes = Callable[[Pipeline], object]
"""Queue the write commands of one transaction on the pipeline (after MULTI)."""

Prepare = Callable[[Pipeline], Awaitable[Writes]]
"""Read what the write depends on (the pipeline is watching), raise if it is refused, return the writes."""


class StoreBase:
    """Hold the Redis client and key layout; run optimistic transactions that bump the version."""

    def __init__(self, redis: Redis, keys: RegistryKeys) -> None:
        """Wrap an open `redis.asyncio.Redis` created with `decode_responses=True`."""
        self._redis = redis
        self._keys = keys

    async def _atomic(self, watch: Sequence[str], prepare: Prepare, *, bump: bool = True) -> list[Any]:
        """Run `prepare` under WATCH, then its writes (and INCR version) in one MULTI; retry on races.

        Returns the EXEC results; when `bump`, the last one is the new version, which is then published
        on the changes channel. Raises whatever `prepare` raises (nothing is written then), or
        `ConcurrentChangeError` after too many lost races.
        """
        for _ in range(_RETRIES):
            async with self._redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(*watch)
                    writes = await prepare(pipe)
                    pipe.multi()  # type: ignore[no-untyped-call]  # unannotated in redis-py
                    writes(pipe)
                    if bump:
                        pipe.incr(self._keys.version)
                    results: list[Any] = await pipe.execute()
                except WatchError:
                    continue
            if bump:
                await self._publish(int(results[-1]))
            return results
        raise ConcurrentChangeError(f"the registry kept changing during the write (keys {list(watch)})")

    async def _publish(self, version: int) -> None:
        """Announce `version` on the changes channel; watchers also poll, so a failure only delays."""
        try:
            await self._redis.publish(self._keys.changes, str(version))
        except Exception:  # the write is committed; a lost notification is covered by polling
            _log.warning("publishing registry version %d failed", version, exc_info=True)

    async def version(self) -> int:
        """Return the registry version (0 before the first change)."""
        raw = await self._redis.get(self._keys.version)
        return int(raw) if raw is not None else 0


def text(value: object) -> str:
    """Return a reply as `str` (the client decodes replies; this also accepts bytes)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a string reply from Redis, got {type(value).__name__}")


def texts(values: Iterable[object]) -> list[str]:
    """Return a list reply as strings."""
    return [text(v) for v in values]


def text_hash(fields: Mapping[Any, Any]) -> dict[str, str]:
    """Return a hash reply as `dict[str, str]`."""
    return {text(k): text(v) for k, v in fields.items()}


def as_fields(fields: Mapping[str, str]) -> Mapping[FieldT, EncodableT]:
    """Return a `dict[str, str]` typed as redis-py's HSET mapping."""
    return cast(Mapping[FieldT, EncodableT], fields)
