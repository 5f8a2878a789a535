"""Re-sign the registry's log from Redis where the log does not vouch for the registry (docs/registry.md,
"Authentication").

A log written before it was signed, or signed with another key, holds records a restore refuses;
so does a log someone wrote to. While Redis holds the registry, at least as new as its log, Redis is
the truth: every entity of Redis whose latest record the log does not give (refused, or missing) is
appended again, signed, with Redis's value, and a key whose latest record was refused and that Redis
does not hold (an entity's key or not) gets a signed tombstone, which compaction then removes with
the records before it. Records a restore takes are left alone. A restore runs this
in the same step as its read of the log (`RestoreOps.restore`); `seal` runs it alone.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from streamjoin.registry._base import StoreBase, text_hash
from streamjoin.registry.log import LogEntry, RefusedEntry, RestoredRegistry, fold

__all__ = ["SealOps", "reasons"]

_log = logging.getLogger(__name__)


class SealOps(StoreBase):
    """The re-signing of `RegistryStore`'s log."""

    async def seal(self) -> int:
        """Re-sign, from Redis, what the log does not vouch for (module docstring); return how many
        records were appended. Does nothing without a log or a key, or while Redis has no registry."""
        if self._log is None or self._signer is None:
            return 0
        async with self._writer_lock():
            return await self._seal(fold(self._keys.prefix, await self._log.read(), self._signer))

    async def _seal(self, state: RestoredRegistry) -> int:
        """Re-sign what `state` (the log, folded) does not give of Redis's registry; the caller holds the
        writer lock. A failure is logged, not raised: the next restore or start-up tries again."""
        if self._log is None or self._signer is None:
            return 0
        k = self._keys
        try:
            version = await self.version()
            if await self._redis.get(k.epoch) is None or version < state.version:
                return 0  # no registry in Redis, or one behind its log: a restore's to fix, not ours
            streams = text_hash(await self._redis.hgetall(k.streams))
            queries = text_hash(await self._redis.hgetall(k.queries))
            entries = [
                LogEntry.stream(k.prefix, name, record)
                for name, record in sorted(streams.items())
                if _unsettled(state, f"{k.prefix}stream:{name}")
            ]
            for name, record in sorted(queries.items()):
                if _unsettled(state, f"{k.prefix}query:{name}"):
                    controls = text_hash(await self._redis.hgetall(k.control(name)))
                    entries.append(LogEntry.query(k.prefix, name, record, controls))
            held = {f"{k.prefix}stream:{n}" for n in streams} | {f"{k.prefix}query:{n}" for n in queries}
            # a tombstone for every other key whose latest record was refused, an entity's or not
            entries += [LogEntry(key, None) for key in sorted(state.unsettled - held)]
            await self._log.append([self._signed(e.at(version)) for e in entries])
        except Exception as exc:  # re-signing is an upkeep of the log; the registry itself is served
            _log.warning(
                "re-signing the registry log from Redis failed (retried at the next restore): %s", exc
            )
            return 0
        if entries:
            _log.warning(
                "re-signed %d registry log record(s) from Redis at version %d (their latest record was "
                "refused or missing: %s)",
                len(entries),
                version,
                reasons(state.refused) or "missing",
            )
        return len(entries)


def _unsettled(state: RestoredRegistry, key: str) -> bool:
    """Return whether the log does not give `key`'s value: its latest record was refused, or it has none."""
    return key in state.refusals or key not in state.versions


def reasons(refused: Sequence[RefusedEntry]) -> str:
    """Return the refusals counted by reason: `malformed 1, unsigned 2`."""
    return ", ".join(f"{reason} {n}" for reason, n in sorted(Counter(r.reason for r in refused).items()))
