"""Rebuild the registry in Redis from its durable log (docs/registry.md, "Durability").

Redis that restarted empty has no `streamjoin:epoch`; every read of the registry then raises
`RegistryUnavailableError` (HTTP 503) instead of answering "no queries", and every write is refused,
until `restore` has folded the log (latest record per key, tombstones delete) and written streams,
queries and controls back in one MULTI with a new epoch and a version above every version the log
and Redis have seen. A Redis that lost acknowledged writes without losing everything (a
snapshot older than the last change) has an epoch but a version below the log's last one:
`restore(check_log=True)` (the control plane's start-up) catches that too.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from redis.asyncio.client import Pipeline
from redis.exceptions import RedisError

from streamjoin.registry._base import StoreBase, Writes, as_fields, text, text_hash, texts
from streamjoin.registry.log import RestoredRegistry, fold

__all__ = ["RestoreOps", "Restored"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore wrote: counts, the new version and epoch, and why it ran."""

    streams: int
    queries: int
    version: int
    epoch: str
    reason: str


class RestoreOps(StoreBase):
    """The epoch and the restore path of `RegistryStore`."""

    async def persistence(self) -> str:
        """Return how Redis persists: `aof-always`, `aof-everysec`, `aof-no`, `rdb`, `none`, or `unknown`
        (CONFIG not allowed). Exactly once needs `aof-always` (docs/exactly-once.md, "Redis persistence")."""
        try:
            config = text_hash(await self._redis.config_get("appendonly"))
            config.update(text_hash(await self._redis.config_get("appendfsync")))
            config.update(text_hash(await self._redis.config_get("save")))
        except RedisError:
            return "unknown"
        if config.get("appendonly") == "yes":
            return f"aof-{config.get('appendfsync', 'everysec')}"
        return "rdb" if config.get("save", "").strip() else "none"

    async def epoch(self) -> str | None:
        """Return the registry's epoch, None when Redis holds no registry (new, or lost)."""
        raw = await self._redis.get(self._keys.epoch)
        return text(raw) if raw is not None else None

    async def restore(self, *, check_log: bool = False) -> Restored | None:
        """Rebuild streams, queries and controls from the log if Redis lost them; return what was done.

        Runs when Redis has no epoch; with `check_log`, also when the log's last version is above
        Redis's (Redis lost acknowledged changes). Returns None when nothing had to be done. Holds the
        writer lock, so no logged write interleaves; several processes may call it at once.

        Raises:
            RuntimeError: the store has no log.
            ValueError: the log holds a record that is not a registry entity (nothing is written).
        """
        if self._log is None:
            raise RuntimeError("this RegistryStore has no log to restore from")
        k = self._keys
        async with self._writer_lock():
            epoch = await self.epoch()
            if epoch is not None and not check_log:
                return None
            state = fold(k.prefix, await self._log.read())
            current = await self.version()
            if epoch is not None and state.version <= current:
                return None
            reason = (
                "Redis has no registry"
                if epoch is None
                else f"Redis is at {current}, its log at {state.version}"
            )
            restored = await self._write(state, reason)
        level = logging.WARNING if restored.version else logging.INFO  # version 0: a new registry
        _log.log(
            level,
            "registry restored from its log (%s): %d streams, %d queries, version %d",
            reason,
            restored.streams,
            restored.queries,
            restored.version,
        )
        if restored.version:
            await self._publish(restored.version)
        return restored

    async def _write(self, state: RestoredRegistry, reason: str) -> Restored:
        k = self._keys
        new_epoch = uuid.uuid4().hex
        versions: list[int] = []

        async def prepare(pipe: Pipeline) -> Writes:
            old = texts(await pipe.hkeys(k.queries))
            raw = await pipe.get(k.version)
            current = int(text(raw)) if raw is not None else 0
            # a new registry (nothing in the log, nothing in Redis) starts at version 0 like one
            # without a log; any other restore is a change every watcher must see
            version = max(current, state.version) + (1 if current or state.version else 0)
            versions.append(version)

            def writes(p: Pipeline) -> None:
                p.delete(k.streams, k.queries, *(k.control(n) for n in old))
                if state.streams:
                    p.hset(k.streams, mapping=as_fields(state.streams))
                if state.queries:
                    p.hset(k.queries, mapping=as_fields(state.queries))
                for name, controls in state.controls.items():
                    if controls:
                        p.hset(k.control(name), mapping=as_fields(controls))
                if version:
                    p.set(k.version, version)
                p.set(k.epoch, new_epoch)

            return writes

        await self._atomic([k.epoch, k.version, k.streams, k.queries], prepare, bump=False)
        return Restored(len(state.streams), len(state.queries), versions[-1], new_epoch, reason)
