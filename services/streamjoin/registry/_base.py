"""The shared core of `RegistryStore`: the client, the keys, and the atomic "check, then write" step."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import WatchError
from redis.typing import EncodableT, FieldT

from streamjoin.registry.errors import ConcurrentChangeError, RegistryUnavailableError
from streamjoin.registry.keys import RegistryKeys
from streamjoin.registry.log import LogEntry, RegistryLog
from streamjoin.registry.query import QueryRecord
from streamjoin.registry.signing import LogSigner
from streamjoin.state.redis.connect import RedisClient

__all__ = ["Logged", "Prepare", "StoreBase", "Writes", "as_fields", "text", "text_hash", "texts"]

_log = logging.getLogger(__name__)
_RETRIES = 20
_RECONNECTS = 2
_LOCK_MS = 30_000
_LOCK_WAIT_MS = 10_000
_UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

Writes = Callable[[Pipeline], object]
"""Queue the write commands of one transaction on the pipeline (after MULTI)."""


@dataclass(frozen=True, slots=True)
class Logged:
    """Writes of a registry change and the log entries (new entity values) that describe it."""

    writes: Writes
    entries: Sequence[LogEntry]


Prepare = Callable[[Pipeline], Awaitable[Writes | Logged]]
"""Read what the write depends on (the pipeline is watching), raise if it is refused, return the writes."""


class StoreBase:
    """Hold the Redis client and key layout; run optimistic transactions that bump the version."""

    def __init__(
        self,
        redis: RedisClient,
        keys: RegistryKeys,
        log: RegistryLog | None = None,
        signer: LogSigner | None = None,
    ) -> None:
        """Wrap an open `redis.asyncio.Redis` created with `decode_responses=True`; `log`: the durable
        log every stream and query change is appended to before Redis (None: Redis only); `signer`:
        signs what is appended and authenticates what a restore reads (None: an unauthenticated log)."""
        self._redis = redis
        self._keys = keys
        self._log = log
        self._signer = signer
        self._known_queries: dict[str, QueryRecord] = {}
        """The queries of the last snapshot: a query whose stored JSON has not changed since is not
        parsed again (`QueryRecord.from_json`'s `known`)."""

    async def _atomic(
        self, watch: Sequence[str], prepare: Prepare, *, bump: bool = True, logged: bool = False
    ) -> list[Any]:
        """Run `prepare` under WATCH, then its writes (and INCR version) in one MULTI; retry on races.

        Returns the EXEC results; when `bump`, the last one is the new version, which is then published
        on the changes channel. Raises whatever `prepare` raises (nothing is written then), or
        `ConcurrentChangeError` after too many lost races.

        A `bump` write needs the registry's epoch: with a log, a Redis without one is being restored
        (`RegistryUnavailableError`); without a log, the write creates it. A `logged` write holds the
        writer lock, and appends `prepare`'s log entries (stamped with the version the write commits)
        before the MULTI, so the log's order per key is the order of the commits.
        """
        if logged and self._log is not None:
            async with self._writer_lock():
                return await self._attempts(watch, prepare, bump=bump)
        return await self._attempts(watch, prepare, bump=bump)

    async def _attempts(self, watch: Sequence[str], prepare: Prepare, *, bump: bool) -> list[Any]:
        k = self._keys
        watched = [*watch, k.epoch, k.version] if bump else list(watch)
        for attempt in range(_RETRIES):
            # A cluster's transactional pipeline speaks the same WATCH/MULTI API (one slot: the keys'
            # `{registry}` tag), so `Prepare` and `Writes` take both as `Pipeline`.
            async with cast(Pipeline, self._redis.pipeline(transaction=True)) as pipe:
                try:
                    await pipe.watch(*watched)
                except RedisConnectionError:  # a pooled connection Redis closed (it restarted): nothing sent
                    if attempt >= _RECONNECTS:
                        raise
                    continue
                try:
                    epoch = await pipe.get(k.epoch) if bump else ""
                    if epoch is None and self._log is not None:
                        raise RegistryUnavailableError("the registry is being restored from its log; retry")
                    prepared = await prepare(pipe)
                    if isinstance(prepared, Logged):
                        await self._append(pipe, prepared.entries)
                        prepared = prepared.writes
                    pipe.multi()  # type: ignore[no-untyped-call]  # unannotated in redis-py
                    prepared(pipe)
                    if epoch is None:
                        pipe.set(k.epoch, uuid.uuid4().hex)
                    if bump:
                        pipe.incr(k.version)
                    results: list[Any] = await pipe.execute()
                except WatchError:
                    continue
            if bump:
                await self._publish(int(results[-1]))
            return results
        raise ConcurrentChangeError(f"the registry kept changing during the write (keys {list(watch)})")

    async def _append(self, pipe: Pipeline, entries: Sequence[LogEntry]) -> None:
        """Append `entries` at the version the write will commit (the pipeline watches the version)."""
        if self._log is None or not entries:
            return
        raw = await pipe.get(self._keys.version)
        version = int(text(raw)) + 1 if raw is not None else 1
        try:
            await self._log.append([self._signed(e.at(version)) for e in entries])
        except Exception as exc:  # not acknowledged: Redis must not get ahead of the log
            raise RegistryUnavailableError(f"the registry log did not take the change: {exc}") from exc

    def _signed(self, entry: LogEntry) -> LogEntry:
        """Return `entry` signed, when the store has a key."""
        return self._signer.sign(entry) if self._signer is not None else entry

    @contextlib.asynccontextmanager
    async def _writer_lock(self) -> AsyncIterator[None]:
        """Hold the registry's writer lock (one logged write or restore at a time, across processes)."""
        token = uuid.uuid4().hex
        deadline = time.monotonic() + _LOCK_WAIT_MS / 1000
        while not await self._redis.set(self._keys.writer, token, nx=True, px=_LOCK_MS):
            if time.monotonic() > deadline:
                raise ConcurrentChangeError("another registry write took too long; retry")
            await asyncio.sleep(0.01)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                await self._redis.eval(_UNLOCK, 1, self._keys.writer, token)

    def _epoch_of(self, raw: object) -> str | None:
        """Return a read epoch; with a log, a missing one means the registry is lost (raise)."""
        if raw is None:
            if self._log is not None:
                raise RegistryUnavailableError("the registry is being restored from its log; retry")
            return None
        return text(raw)

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
