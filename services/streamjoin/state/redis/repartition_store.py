"""Where each repartitioner of a re-keyed input stands, in Redis (docs/exactly-once.md, "Re-keyed inputs").

One hash per (query, input, source partition), hash-tagged by the source partition like the
operators' state: `epoch`, `owner`, `claimed_at`, `position` (the next source offset to re-key) and
`maxts` (the largest timestamp re-keyed so far, JSON). The owner epoch is drawn from the partition's
counter (`StateKeys.epochs`), so a repartitioner that lost its source partition cannot commit or
produce any more (each produce is preceded by `check_owner`).

The ledger `<prefix>internal-topics` (a hash: internal topic -> JSON `{"query", "generation"}`)
lists every internal topic a worker created or a deleted or redefined query may have left, so that
deleting them survives a crash of whoever started it (`streamjoin.joiner.repartition.cleanup`). A sweep
about to delete a topic marks it in the same hash (field `@deleting:<topic>`, no topic name starts
with `@`: its token and deadline), only if the topic's entry is still the one it judged unused; a
worker laying a query out records its topics only while no live mark is on them. So a query deleted
and registered again while a sweep runs either records its topics first (the mark is refused, the
topic stays) or waits until the deletion is over and creates them again.

>>> RepartitionStore.key("streamjoin:", "flows", "b", 3)
'streamjoin:{3}:repart:5:flows:b'
>>> print(RepartitionStore.pattern("streamjoin:", "fl*ws"))
streamjoin:{*}:repart:5:fl\\*ws:*
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from redis.exceptions import NoScriptError

from streamjoin.client_security import redis_options
from streamjoin.settings import Settings
from streamjoin.state.base import FencedError, StateUnavailableError
from streamjoin.state.redis.connect import connect
from streamjoin.state.redis.connect import guard as _guard
from streamjoin.state.redis.keys import StateKeys
from streamjoin.state.redis.scripts import CLAIM

__all__ = ["RepartitionPosition", "RepartitionStore"]

_T = TypeVar("_T")
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")

# KEYS[1] the repartitioner's hash; ARGV: epoch, position, maxts ('' : none yet).
_COMMIT = """
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if epoch ~= ARGV[1] then
  return redis.error_reply('FENCED owner epoch is ' .. tostring(epoch) .. ', not ' .. ARGV[1])
end
redis.call('HSET', KEYS[1], 'position', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'maxts', ARGV[3]) end
return 1
"""


# KEYS[1] the ledger; ARGV: topic, the entry it must still hold.
_FORGET = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""

_DELETING = "@deleting:"
"""The ledger field marking a topic a sweep is deleting (`mark_deleting`)."""

_LIVE_MARK = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function live_mark(topic)
  local mark = redis.call('HGET', KEYS[1], '@deleting:' .. topic)
  return mark and tonumber(string.match(mark, ' (%d+)$')) > now_ms()
end
"""

# KEYS[1] the ledger; ARGV: topic, the entry it must still hold, token, how long the mark lives (ms).
_MARK_DELETING = (
    _LIVE_MARK
    + """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] or live_mark(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], '@deleting:' .. ARGV[1], ARGV[3] .. ' ' .. (now_ms() + tonumber(ARGV[4])))
return 1
"""
)

# KEYS[1] the ledger; ARGV: the entry, then the topics. Writes nothing and returns the topics marked
# for deletion if any is; else records every topic.
_RECORD = (
    _LIVE_MARK
    + """
local busy = {}
for i = 2, #ARGV do
  if live_mark(ARGV[i]) then table.insert(busy, ARGV[i]) end
end
if #busy == 0 then
  for i = 2, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], ARGV[1]) end
end
return busy
"""
)

# KEYS[1] the ledger; ARGV: topic, token. Removes the mark if it is still that token's.
_UNMARK = """
local field = '@deleting:' .. ARGV[1]
local mark = redis.call('HGET', KEYS[1], field)
if mark and string.sub(mark, 1, #ARGV[2] + 1) == ARGV[2] .. ' ' then
  return redis.call('HDEL', KEYS[1], field)
end
return 0
"""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


@dataclass(frozen=True, slots=True)
class RepartitionPosition:
    """What `claim` returns: the new owner epoch and what was committed (None: nothing yet)."""

    epoch: int
    position: int | None
    maxts: str | None
    """The largest timestamp re-keyed so far, as JSON text."""


class RepartitionStore:
    """Claim, commit and fence the position of each repartitioner."""

    def __init__(
        self, url: str, *, prefix: str = "streamjoin:", timeout_ms: int = 5_000, **options: Any
    ) -> None:
        """Create the client (nothing connects before the first command); `options` go to `connect`."""
        self._redis = connect(
            url,
            socket_timeout=timeout_ms / 1000,
            socket_connect_timeout=min(timeout_ms, 2_000) / 1000,
            **options,
        )
        self.prefix = prefix
        self._claim = self._redis.register_script(CLAIM)
        self._commit = self._redis.register_script(_COMMIT)
        self._forget = self._redis.register_script(_FORGET)
        self._mark_deleting = self._redis.register_script(_MARK_DELETING)
        self._record = self._redis.register_script(_RECORD)
        self._unmark = self._redis.register_script(_UNMARK)

    @classmethod
    def from_settings(cls, settings: Settings, *, prefix: str = "streamjoin:") -> RepartitionStore:
        """Create the store of `settings.redis_url` with its TLS options."""
        return cls(
            settings.redis_url,
            prefix=prefix,
            cluster=settings.redis_cluster,
            max_connections=settings.redis_max_connections,
            **redis_options(settings),
        )

    @staticmethod
    def key(prefix: str, query: str, stream: str, partition: int) -> str:
        """Return the hash of (query, stream, source partition); the query's length keeps a query
        whose name extends another's apart from it. `stream` is whatever names the input's
        repartitioners (the joiner adds the query's incarnation to it)."""
        return f"{prefix}{{{partition}}}:repart:{len(query)}:{query}:{stream}"

    @staticmethod
    def pattern(prefix: str, query: str) -> str:
        """Return a SCAN pattern matching every repartitioner hash of `query` (and only its)."""
        escaped = _GLOB_SPECIAL.sub(r"\\\1", query)
        return f"{prefix}{{*}}:repart:{len(query)}:{escaped}:*"

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()

    async def claim(self, query: str, stream: str, partition: int, owner: str) -> RepartitionPosition:
        """Become the owner (fencing earlier ones); return the new epoch and the committed position."""
        key = self.key(self.prefix, query, stream, partition)
        epochs = StateKeys(self.prefix, query, partition).epochs
        try:
            epoch = await _guard(lambda: self._claim(keys=[key, epochs], args=[owner, str(time.time())]))
        except NoScriptError:  # pragma: no cover - redis-py reloads scripts itself
            raise StateUnavailableError("Redis lost its scripts") from None
        position, maxts = await _guard(lambda: self._redis.hmget(key, ["position", "maxts"]))
        return RepartitionPosition(
            int(epoch),
            int(position) if position is not None else None,
            maxts.decode() if isinstance(maxts, bytes) else maxts,
        )

    async def commit(
        self, query: str, stream: str, partition: int, epoch: int, position: int, maxts: str | None
    ) -> None:
        """Record the next source offset to re-key (and the largest timestamp); raise `FencedError`
        if another owner claimed the partition."""
        key = self.key(self.prefix, query, stream, partition)
        await _guard(lambda: self._commit(keys=[key], args=[epoch, position, maxts or ""]))

    async def check_owner(self, query: str, stream: str, partition: int, epoch: int) -> None:
        """Raise `FencedError` unless `epoch` is still the owner's (read right before producing)."""
        key = self.key(self.prefix, query, stream, partition)
        held = await _guard(lambda: self._redis.hget(key, "epoch"))
        if held is None or int(held) != epoch:
            raise FencedError(f"repartitioner owner epoch is {held!r}, not {epoch}: not producing")

    async def position(self, query: str, stream: str, partition: int) -> int | None:
        """Return the committed next source offset of one repartitioner (None: not positioned yet)."""
        key = self.key(self.prefix, query, stream, partition)
        value = await _guard(lambda: self._redis.hget(key, "position"))
        return int(value) if value is not None else None

    async def positions(self, query: str, sources: Iterable[tuple[str, int]]) -> list[int | None]:
        """Return the committed position of each (stream, source partition) of `sources`, in order
        (None: not positioned yet)."""
        keys = [self.key(self.prefix, query, stream, p) for stream, p in sources]

        async def run() -> list[Any]:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.hget(key, "position")
                return await pipe.execute()

        return [int(value) if value is not None else None for value in await _guard(run)]

    async def positioned(self, query: str, sources: Iterable[tuple[str, int]]) -> bool:
        """Return True when every (stream, source partition) of `sources` has a committed position."""
        return all(position is not None for position in await self.positions(query, sources))

    @property
    def ledger_key(self) -> str:
        """Return the hash listing the internal topics still to be checked or deleted."""
        return f"{self.prefix}internal-topics"

    async def record_topics(self, query: str, generation: str, topics: Iterable[str]) -> list[str]:
        """Note that `topics` belong to `query`'s incarnation `generation` ('' : an earlier one),
        unless a sweep is deleting one of them: then note nothing and return those (see the module)."""
        value = json.dumps({"query": query, "generation": generation})
        names = sorted(set(topics))
        if not names:
            return []
        busy = await _guard(lambda: self._record(keys=[self.ledger_key], args=[value, *names]))
        return [_text(t) for t in busy]

    async def ledger(self) -> dict[str, tuple[str, str]]:
        """Return each listed internal topic's (query, generation)."""
        raw = await _guard(lambda: self._redis.hgetall(self.ledger_key))
        entries = {_text(k): v for k, v in raw.items()}
        parsed = {t: json.loads(v) for t, v in entries.items() if not t.startswith(_DELETING)}
        return {topic: (e["query"], e["generation"]) for topic, e in parsed.items()}

    async def mark_deleting(self, topic: str, query: str, generation: str, token: str, ttl_ms: int) -> bool:
        """Mark `topic` as being deleted for `ttl_ms` if its entry still says (query, generation) and
        no other live mark is on it; return whether it is marked (see the module)."""
        value = json.dumps({"query": query, "generation": generation})
        args: list[str | int] = [topic, value, token, ttl_ms]
        return bool(await _guard(lambda: self._mark_deleting(keys=[self.ledger_key], args=args)))

    async def unmark_deleting(self, topic: str, token: str) -> None:
        """Remove `token`'s mark on `topic` (the deletion is over, or failed)."""
        await _guard(lambda: self._unmark(keys=[self.ledger_key], args=[topic, token]))

    async def forget_topic(self, topic: str, query: str, generation: str) -> bool:
        """Remove `topic` from the ledger if it still says (query, generation); return whether it did."""
        value = json.dumps({"query": query, "generation": generation})
        done = await _guard(lambda: self._forget(keys=[self.ledger_key], args=[topic, value]))
        return bool(done)

    async def drop_generations(self, query: str, keep: str) -> int:
        """Delete the positions of `query`'s incarnations other than `keep`; return how many went."""
        pattern = self.pattern(self.prefix, query)
        tail = f":{len(query)}:{query}:{keep}/"

        async def run() -> int:
            keys = [k async for k in self._redis.scan_iter(match=pattern, count=1000) if tail not in _text(k)]
            for start in range(0, len(keys), 500):
                await self._redis.unlink(*keys[start : start + 500])
            return len(keys)

        return await _guard(run)

    async def drop(self, query: str) -> int:
        """Delete the positions of every repartitioner of `query` (idempotent); return how many went."""
        pattern = self.pattern(self.prefix, query)

        async def run() -> int:
            keys = [key async for key in self._redis.scan_iter(match=pattern, count=1000)]
            for start in range(0, len(keys), 500):
                await self._redis.unlink(*keys[start : start + 500])
            return len(keys)

        return await _guard(run)
