"""Rebuild the registry in Redis from its durable log (docs/registry.md, "Durability").

Redis that restarted empty has no `streamjoin:epoch`; every read of the registry then raises
`RegistryUnavailableError` (HTTP 503) instead of answering "no queries", and every write is refused,
until `restore` has folded the log (latest record per key, tombstones delete) and written streams,
queries and controls back in one MULTI with a new epoch and a version above every version the log
and Redis have seen. A Redis that lost acknowledged writes without losing everything (a
snapshot older than the last change) has an epoch but a version below the log's last one:
`restore(check_log=True)` (the control plane's start-up) catches that too.

The log is a topic others may write to, so a restore trusts no record blindly: a record that is not
authentic (its HMAC, `streamjoin.registry.signing`), is no registry entity, or holds an entity the
control plane would refuse to register (`EntityCheck`, the control plane's own validation) is
skipped, logged with its reason and returned in `Restored.refused`; it never stops the restore.
Each restore that read the log then re-signs, from Redis, the entities whose latest record was
refused or is missing (`streamjoin.registry.seal`), so a log written before it was signed, or with
another key, becomes authentic while Redis still holds the registry.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from redis.asyncio.client import Pipeline
from redis.exceptions import RedisError

from streamjoin.registry._base import Writes, as_fields, text, text_hash, texts
from streamjoin.registry.log import RefusedEntry, RestoredRegistry, fold
from streamjoin.registry.query import QueryControls, QueryRecord
from streamjoin.registry.records import StreamRecord
from streamjoin.registry.seal import SealOps, reasons
from streamjoin.registry.signing import REGISTRY_KEY_ENV

__all__ = ["EntityCheck", "RestoreOps", "Restored"]

_log = logging.getLogger(__name__)
_LOGGED_REFUSALS = 20
"""Refused records logged one by one per restore; the rest are counted (a flood must not flood the log)."""


class EntityCheck(Protocol):
    """What the control plane would refuse to register: its own validation, applied to restored entities."""

    def stream(self, stream: StreamRecord) -> None:
        """Raise `ValueError` saying why `stream` would be refused."""

    def query(self, query: QueryRecord, streams: Mapping[str, StreamRecord]) -> None:
        """Raise `ValueError` saying why `query` (over the accepted `streams`) would be refused."""


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore wrote: counts, the new version and epoch, and why it ran."""

    streams: int
    queries: int
    version: int
    epoch: str
    reason: str
    refused: tuple[RefusedEntry, ...] = ()
    """The log records the restore did not take, and why."""


class RestoreOps(SealOps):
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

    async def restore(self, *, check_log: bool = False, check: EntityCheck | None = None) -> Restored | None:
        """Rebuild streams, queries and controls from the log if Redis lost them; return what was done.

        Runs when Redis has no epoch; with `check_log`, also when the log's last version is above
        Redis's (Redis lost acknowledged changes). Returns None when nothing had to be done. Holds the
        writer lock, so no logged write interleaves; several processes may call it at once. Records
        that are not authentic or not entities, and entities that do not parse or that `check`
        refuses, are skipped and listed in `Restored.refused` (see the module docstring). Whenever it
        read the log, it then re-signs what the log does not vouch for (`SealOps`), in the same step.

        Raises:
            RuntimeError: the store has no log.
        """
        if self._log is None:
            raise RuntimeError("this RegistryStore has no log to restore from")
        k = self._keys
        async with self._writer_lock():
            epoch = await self.epoch()
            if epoch is not None and not check_log:
                return None
            state = fold(k.prefix, await self._log.read(), self._signer)
            current = await self.version()
            if epoch is not None and state.version <= current:
                await self._seal(state)
                return None
            reason = (
                "Redis has no registry"
                if epoch is None
                else f"Redis is at {current}, its log at {state.version}"
            )
            _admit(k.prefix, state, check)
            restored = await self._write(state, reason)
            await self._seal(state)
        _report(restored.refused, signed=self._signer is not None)
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
        return Restored(
            len(state.streams), len(state.queries), versions[-1], new_epoch, reason, tuple(state.refused)
        )


def _admit(prefix: str, state: RestoredRegistry, check: EntityCheck | None) -> None:
    """Drop, as `invalid`, the entities of `state` that do not parse or that `check` refuses."""
    streams: dict[str, StreamRecord] = {}
    for name, raw in sorted(state.streams.items()):
        key = f"{prefix}stream:{name}"
        try:
            stream = StreamRecord.from_json(raw)
            if stream.name != name:
                raise ValueError(f"its record names stream {stream.name!r}")
            if check is not None:
                check.stream(stream)
        except (ValueError, KeyError, TypeError) as exc:
            state.refuse(key, state.versions.get(key, 0), "invalid", _text(exc))
            del state.streams[name]
            continue
        streams[name] = stream
    for name, raw in sorted(state.queries.items()):
        key = f"{prefix}query:{name}"
        try:
            controls = QueryControls.from_hash(state.controls.get(name, {}))
            query = QueryRecord.from_json(name, raw, controls)
            query.effective()
            if check is not None:
                check.query(query, streams)
        except (ValueError, KeyError, TypeError) as exc:
            state.refuse(key, state.versions.get(key, 0), "invalid", _text(exc))
            del state.queries[name]
            state.controls.pop(name, None)


def _text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _report(refused: Sequence[RefusedEntry], *, signed: bool) -> None:
    """Log the refused records: the first ones each with its reason, then the counts."""
    for entry in refused[:_LOGGED_REFUSALS]:
        _log.warning("registry log record refused at restore: %s", entry.describe())
    if refused:
        unsigned = any(r.reason in ("unsigned", "bad_signature") for r in refused)
        hint = (
            f"; records written before {REGISTRY_KEY_ENV} was set, or with another key, are refused: "
            'see docs/registry.md, "Authentication"'
            if unsigned
            else ""
        )
        _log.warning(
            "%d registry log record(s) refused at restore (%s)%s", len(refused), reasons(refused), hint
        )
    if not signed:
        _log.warning(
            "the registry log is not authenticated: %s is not set (development only)", REGISTRY_KEY_ENV
        )
