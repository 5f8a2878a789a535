"""`RedisStateStore`: the operator state of docs/exactly-once.md in Redis, one round trip per batch.

Layout per (query, partition), every key hash-tagged by partition (see `keys.py`): `meta` (epoch,
owner, batch number, next offset per input topic, engine scalars, outbox sequence numbers, counters,
the inputs' topics), `rec` (the window and reorder-buffer entries, `input:offset` -> entry header),
`seq` (release numbers of entries released after their batch), `outbox:results` and `outbox:dead`
(committed, unpublished output records). Per (topic, partition), shared by every query reading the
topic: `table:{topic}` (offset -> record bytes) and `table:{topic}:counts` (offset -> entries
holding it, for records held more than once), so a record is stored once however many queries hold
it, for as long as the longest-holding one does (the largest window asking for it). Per partition:
`epochs`, the counter owner epochs are drawn from.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgpack
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError

from streamjoin.client_security import redis_options
from streamjoin.settings import Settings
from streamjoin.state.base import (
    Checkpoint,
    CommitBatch,
    FencedError,
    OutboxState,
    StateUnavailableError,
    Trim,
)
from streamjoin.state.outbox import pack_records, unpack_records
from streamjoin.state.redis.codec import field_of, pack_entry, parse_field, raw_key, record_id, unpack_entry
from streamjoin.state.redis.connect import connect, guard
from streamjoin.state.redis.eviction import eviction_problem
from streamjoin.state.redis.keys import StateKeys
from streamjoin.state.redis.scripts import CLAIM, COMMIT, DROP, OUTBOXES, TRIM

__all__ = ["RedisStateStore"]

_OFFSET = "offset:"
_COUNT = "count:"
_START = "start:"
_SOURCE = "source:"


class RedisStateStore:
    """Claim, commit and trim operator state in Redis (implements `streamjoin.state.StateStore`)."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "streamjoin:",
        timeout_ms: int = 5_000,
        connection: Mapping[str, Any] | None = None,
        max_connections: int | None = None,
        cluster: bool = False,
        commit_replicas: int = 0,
        commit_wait_ms: int = 1_000,
    ) -> None:
        """Create the client (nothing connects before the first command).

        Args:
            url: the Redis URL (`STREAMJOIN_REDIS_URL`).
            prefix: key prefix, shared with the registry.
            timeout_ms: socket timeout of every command.
            connection: more keyword arguments of `Redis.from_url`, e.g. the TLS options of
                `streamjoin.client_security.redis_options`.
            max_connections: size of the connection pool; a command waits (up to `timeout_ms`) for
                a free connection instead of failing (redis-py's default pool fails past 100, which
                a worker running 200 queries' operators at once reached). None: redis-py's pool.
            cluster: treat a `redis://` URL as a node of a Redis Cluster (`redis+cluster://` is one).
            commit_replicas: how many replicas must hold each claim and commit (`WAIT`) before it
                returns; fewer within `commit_wait_ms` raises `StateUnavailableError` (0: no wait).
            commit_wait_ms: the `WAIT` timeout.
        """
        self._replicas = commit_replicas
        self._wait_ms = commit_wait_ms
        self._redis = connect(
            url,
            cluster=cluster,
            max_connections=max_connections,
            socket_timeout=timeout_ms / 1000,
            socket_connect_timeout=min(timeout_ms, 2_000) / 1000,
            **(connection or {}),
        )
        self.prefix = prefix
        self._claim = self._redis.register_script(CLAIM)
        self._commit = self._redis.register_script(COMMIT)
        self._trim = self._redis.register_script(TRIM)
        self._drop = self._redis.register_script(DROP)

    @classmethod
    def from_settings(cls, settings: Settings, **options: Any) -> RedisStateStore:
        """Create the store of `settings.redis_url` with its TLS options (`STREAMJOIN_REDIS_TLS_CA_FILE`);
        `options` are `__init__`'s keyword arguments."""
        options.setdefault("max_connections", settings.redis_max_connections)
        return cls(
            settings.redis_url,
            connection=redis_options(settings),
            cluster=settings.redis_cluster,
            commit_replicas=settings.redis_commit_replicas,
            commit_wait_ms=settings.redis_commit_wait_ms,
            **options,
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()

    def keys(self, query: str, partition: int) -> StateKeys:
        """Return the key layout of one operator."""
        return StateKeys(self.prefix, query, partition)

    async def ping(self) -> bool:
        """Return True if Redis answers."""
        return bool(await guard(self._redis.ping))

    async def eviction_problem(self) -> str | None:
        """Return why this Redis may evict the store's keys (`eviction.py`), or None."""
        return await guard(lambda: eviction_problem(self._redis))

    async def claim(self, query: str, partition: int, owner: str, topics: Sequence[str]) -> Checkpoint:
        """Become the owner of (query, partition), fencing earlier owners; return the committed state."""
        k = self.keys(query, partition)

        async def run() -> list[Any]:
            async with self._redis.pipeline(transaction=True) as pipe:
                # EVALSHA by name: a cluster's pipeline runs no `Script` objects (NOSCRIPT: see below).
                now = time.time()  # the epoch counter of a Redis that lost it restarts at the clock (ms)
                pipe.execute_command(
                    "EVALSHA", self._claim.sha, 2, k.meta, k.epochs, owner, str(now), int(now * 1000)
                )
                pipe.hgetall(k.meta)
                pipe.hgetall(k.records)
                pipe.hgetall(k.seqs)
                for name in OUTBOXES:
                    pipe.lrange(k.outbox(name), 0, -1)
                return await pipe.execute()

        try:
            epoch, meta_raw, records, seqs, *pending = await guard(run)
        except NoScriptError:  # a new Redis, or a promoted replica: no script cache
            await guard(lambda: self._redis.script_load(CLAIM))
            epoch, meta_raw, records, seqs, *pending = await guard(run)
        if self._replicas:  # a lost claim would hand its epoch out twice after a failover
            await guard(lambda: self._replicated([("INCRBY", k.epochs, 0)], k.epochs))
        fields = [f.decode() for f in records]
        where = [parse_field(f) for f in fields]
        raws = await self._read_tables(k, topics, where)
        meta = {key.decode(): value.decode() for key, value in meta_raw.items()}
        seq_of = {f.decode(): int(v) for f, v in seqs.items()}
        entries = [
            unpack_entry(f, partition, header, raws[raw_key(*at)], seq_of.get(f))
            for f, at, header in zip(fields, where, records.values(), strict=True)
        ]
        outboxes = {
            name: _outbox_state(meta, name, blobs) for name, blobs in zip(OUTBOXES, pending, strict=True)
        }
        scalars = json.loads(meta["scalars"]) if "scalars" in meta else None
        return Checkpoint(
            epoch=int(epoch),
            batch=int(meta.get("batch", 0)),
            offsets={f[len(_OFFSET) :]: int(v) for f, v in meta.items() if f.startswith(_OFFSET)},
            scalars=scalars,
            entries=entries,
            outboxes=outboxes,
            counters={f[len(_COUNT) :]: int(v) for f, v in meta.items() if f.startswith(_COUNT)},
            output_start={f[len(_START) :]: int(v) for f, v in meta.items() if f.startswith(_START)},
            raws=raws,
            sources={f[len(_SOURCE) :]: int(v) for f, v in meta.items() if f.startswith(_SOURCE)},
        )

    async def _read_tables(
        self, k: StateKeys, topics: Sequence[str], wanted: Sequence[tuple[int, int | None, int]]
    ) -> dict[tuple[int, ...], bytes]:
        """Return the record bytes of (input, source partition or None, offset)s from the shared
        tables, by `raw_key` (the caller holds a reference to each, so none can go away in between)."""
        by_topic: dict[str, list[tuple[int, int | None, int]]] = {}
        for item in wanted:
            by_topic.setdefault(topics[item[0]], []).append(item)

        async def run() -> list[Any]:
            async with self._redis.pipeline(transaction=False) as pipe:
                for topic, items in by_topic.items():
                    pipe.hmget(
                        k.table(topic),
                        [b"%d" % off if part is None else b"%d.%d" % (part, off) for _, part, off in items],
                    )
                return await pipe.execute()

        found: dict[tuple[int, ...], bytes] = {}
        for items, values in zip(by_topic.values(), await guard(run), strict=True):
            for item, raw in zip(items, values, strict=True):
                if raw is None:
                    raise RuntimeError(f"record {item} of {k.query}[{k.partition}] is missing from its table")
                found[raw_key(*item)] = raw
        return found

    async def commit(self, query: str, partition: int, epoch: int, batch: CommitBatch) -> None:
        """Apply one batch atomically (idempotent by batch number); raise `FencedError` if not owner."""
        k = self.keys(query, partition)
        tables, slot = _tables_of(batch.topics)
        # Offsets go as text: Lua would format a number for every Redis call that names it. The
        # loops run per record, so they spell `field_of` (`input:offset`) out.
        add_offsets: list[list[bytes]] = [[] for _ in tables]
        add_pairs: list[list[bytes]] = [[] for _ in tables]
        rec_args: list[Any] = []
        # An entry of another partition (a re-keyed input's record) is named `partition.offset`.
        for entry, raw in batch.added:
            offset_text = (
                b"%d" % entry.offset if entry.partition == partition else record_id(entry, partition)
            )
            rec_args += (b"%d:%s" % (entry.input, offset_text), pack_entry(entry))
            t = slot[entry.input]
            add_offsets[t].append(offset_text)
            add_pairs[t] += (offset_text, raw)
        for entry in batch.rewritten:  # a header stored again (`passes`), its record bytes untouched
            rec_args += (field_of(entry, partition), pack_entry(entry))
        seq_args: list[Any] = []
        for entry in batch.released:  # never one added in this batch (`CommitBatch.released`)
            seq_args += (field_of(entry, partition), entry.seq)
        deleted: list[bytes] = []
        releases: list[list[bytes]] = [[] for _ in tables]
        for e in batch.expired:
            offset_text = b"%d" % e.offset if e.partition == partition else record_id(e, partition)
            deleted.append(b"%d:%s" % (e.input, offset_text))
            releases[slot[e.input]].append(offset_text)
        meta_args: list[Any] = ["scalars", json.dumps(batch.scalars)]
        if batch.topics:
            meta_args += ("topics", json.dumps(list(batch.topics)))
        for topic, offset in batch.offsets.items():
            meta_args += (_OFFSET + topic, offset)
        for name, offset in batch.output_start.items():
            meta_args += (_START + name, offset)
        for name, offset in batch.sources.items():
            meta_args += (_SOURCE + name, offset)
        incr_args: list[Any] = []
        for name, value in batch.counters.items():
            if value:
                incr_args += (_COUNT + name, value)
        results = batch.outbox.get("results", ())
        dead = batch.outbox.get("dead", ())
        trim_args = _trim_args(batch.trims)
        sections = [
            rec_args,
            seq_args,
            deleted,
            meta_args,
            incr_args,
            len(results),
            len(dead),
            trim_args,
            [[t + 1, add_offsets[t], add_pairs[t]] for t in range(len(tables)) if add_offsets[t]],
            [[t + 1, releases[t]] for t in range(len(tables)) if releases[t]],
        ]
        args: list[Any] = [
            epoch,
            batch.batch,
            msgpack.packb(sections, use_bin_type=False),
            *(pack_records(records) if records else b"" for records in (results, dead)),
        ]
        keys = [
            k.meta,
            k.records,
            k.seqs,
            *(k.outbox(n) for n in OUTBOXES),
            *_table_keys(k, tables),
        ]
        if not self._replicas:
            await guard(lambda: self._commit(keys=keys, args=args))
            return
        command = ("EVALSHA", self._commit.sha, len(keys), *keys, *args)
        for attempt in range(2):
            try:
                await guard(lambda: self._replicated([command], k.meta))
                return
            except NoScriptError:  # a promoted replica has no script cache
                if attempt:
                    raise
                await guard(lambda: self._redis.script_load(COMMIT))

    async def _replicated(self, commands: Sequence[tuple[Any, ...]], key: str) -> list[Any]:
        """Send `commands` (all on `key`'s slot) and `WAIT` on the same connection; raise
        `StateUnavailableError` unless `commit_replicas` replicas acknowledged them in time."""
        pipe = self._redis.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        wait = ("WAIT", self._replicas, self._wait_ms)
        if isinstance(self._redis, RedisCluster):  # the slot's primary, on the commands' connection
            pipe.execute_command(*wait, target_nodes=self._redis.get_node_from_key(key))
        else:
            pipe.execute_command(*wait)
        *replies, acked = await pipe.execute()
        if int(acked) < self._replicas:
            raise StateUnavailableError(
                f"only {acked} of {self._replicas} Redis replicas acknowledged the write "
                f"within {self._wait_ms} ms"
            )
        return replies

    async def trim(self, query: str, partition: int, epoch: int, trims: Sequence[Trim]) -> None:
        """Drop the published records of each outbox up to its `Trim.seq`."""
        if not trims:
            return
        k = self.keys(query, partition)
        keys = [k.meta, k.records, k.seqs, *(k.outbox(n) for n in OUTBOXES)]
        await guard(lambda: self._trim(keys=keys, args=[epoch, *_trim_args(trims)]))

    async def check_owner(self, query: str, partition: int, epoch: int) -> None:
        """Raise `FencedError` unless `epoch` is still the owner's: one `HGET` of the meta hash."""
        k = self.keys(query, partition)
        held = await guard(lambda: self._redis.hget(k.meta, "epoch"))
        if held is None or int(held) != epoch:
            raise FencedError(f"owner epoch is {held!r}, not {epoch}: not publishing")

    async def used_memory(self) -> int:
        """Return Redis' `used_memory` in bytes (on a cluster: the sum over its primaries)."""
        redis = self._redis
        if isinstance(redis, RedisCluster):
            infos = await guard(lambda: redis.info("memory", target_nodes=RedisCluster.PRIMARIES))
            return sum(int(info["used_memory"]) for info in infos.values())
        info = await guard(lambda: redis.info("memory"))
        return int(info["used_memory"])

    async def table_sizes(self, tables: Iterable[tuple[int, str]]) -> dict[tuple[int, str], tuple[int, int]]:
        """Return (records, records held more than once) of each shared window table, by (partition,
        topic): one round trip for all of them."""
        wanted = list(tables)

        async def run() -> list[Any]:
            async with self._redis.pipeline(transaction=False) as pipe:
                for partition, topic in wanted:
                    k = self.keys("", partition)
                    pipe.hlen(k.table(topic))
                    pipe.hlen(k.table_counts(topic))
                return await pipe.execute()

        sizes = await guard(run)
        return {t: (int(sizes[2 * i]), int(sizes[2 * i + 1])) for i, t in enumerate(wanted)}

    async def drop_query(self, query: str) -> int:
        """Delete the state of every partition of `query` and release its references to the shared
        window tables; return how many keys were deleted."""
        pattern = StateKeys.query_pattern(self.prefix, query)

        async def run() -> int:
            doomed: dict[int, list[bytes]] = {}
            async for key in self._redis.scan_iter(match=pattern, count=1000):
                partition = StateKeys.partition_of(self.prefix, query, key.decode())
                if partition is not None:
                    doomed.setdefault(partition, []).append(key)
            for partition in doomed:
                k = self.keys(query, partition)
                topics_json = await self._redis.hget(k.meta, "topics")
                if topics_json is None:
                    continue
                tables, slot = _tables_of(json.loads(topics_json))
                keys = [k.meta, k.records, k.seqs, *(k.outbox(n) for n in OUTBOXES), *_table_keys(k, tables)]
                await self._drop(keys=keys, args=[t + 1 for t in slot])
            flat = [key for keys in doomed.values() for key in keys]
            for start in range(0, len(flat), 500):
                await self._redis.unlink(*flat[start : start + 500])
            return len(flat)

        return await guard(run)


def _tables_of(topics: Sequence[str]) -> tuple[list[str], list[int]]:
    """Return the distinct topics of the inputs (their tables, in the scripts' order) and the index
    of each input's table among them."""
    tables = list(dict.fromkeys(topics))
    return tables, [tables.index(t) for t in topics]


def _table_keys(k: StateKeys, tables: Sequence[str]) -> list[str]:
    """Return (records, counts) of each table, in the scripts' order (topic t at KEYS[4 + 2t], 5 + 2t)."""
    return [key for topic in tables for key in (k.table(topic), k.table_counts(topic))]


def _outbox_state(meta: Mapping[str, str], name: str, blobs: Sequence[bytes]) -> OutboxState:
    """Return outbox `name` as `claim` read it: the list holds records `seq - n + 1 .. seq` (n: the
    records of its blobs), the first blob maybe published in part (records up to `acked`)."""
    seq, acked = int(meta.get(f"{name}:seq", 0)), int(meta.get(f"{name}:acked", 0))
    held = [record for blob in blobs for record in unpack_records(blob)]
    first = seq - len(held) + 1
    return OutboxState(seq, acked, int(meta.get(f"{name}:acked_offset", -1)), held[acked + 1 - first :])


def _trim_args(trims: Sequence[Trim]) -> list[Any]:
    args: list[Any] = []
    for t in trims:
        args += (t.outbox, t.seq, t.offset)
    return args
