"""Streams, queries, controls and re-plan requests: what the control plane writes and joiners read."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from redis.asyncio.client import Pipeline

from streamjoin.query import QueryError
from streamjoin.registry._base import Logged, StoreBase, Writes, as_fields, text, text_hash, texts
from streamjoin.registry.admission import Admission
from streamjoin.registry.errors import AlreadyExistsError, ConcurrentChangeError, InUseError, NotFoundError
from streamjoin.registry.keys import RegistryKeys
from streamjoin.registry.log import LogEntry
from streamjoin.registry.query import QueryControls, QueryRecord
from streamjoin.registry.records import RegistrySnapshot, StreamRecord

__all__ = ["CatalogOps"]


class CatalogOps(StoreBase):
    """Registry writes of the control plane; every one is one MULTI that also bumps the version.

    Stream and query changes are logged (`streamjoin.registry.log`): with a log, the entity's new
    value (or a tombstone) is appended, and acknowledged, before the MULTI.
    """

    # ---- streams -------------------------------------------------------------------------------

    async def create_stream(self, stream: StreamRecord) -> int:
        """Register `stream`; return the new version. Raises `AlreadyExistsError`."""
        k = self._keys

        async def prepare(pipe: Pipeline) -> Logged:
            if await pipe.hexists(k.streams, stream.name):
                raise AlreadyExistsError("stream", stream.name)
            entry = LogEntry.stream(k.prefix, stream.name, stream.to_json())
            return Logged(lambda p: p.hset(k.streams, stream.name, stream.to_json()), [entry])

        return int((await self._atomic([k.streams], prepare, logged=True))[-1])

    async def delete_stream(self, name: str) -> int:
        """Remove a stream no query reads; return the new version. Raises `NotFoundError`, `InUseError`."""
        k = self._keys

        async def prepare(pipe: Pipeline) -> Logged:
            if not await pipe.hexists(k.streams, name):
                raise NotFoundError("stream", name)
            queries, _ = _queries(text_hash(await pipe.hgetall(k.queries)), {}, self._known_queries)
            users = [q.name for q in queries.values() if name in q.streams]
            if users:
                raise InUseError("stream", name, users)
            return Logged(lambda p: p.hdel(k.streams, name), [LogEntry.tombstone(k.prefix, "stream", name)])

        return int((await self._atomic([k.streams, k.queries], prepare, logged=True))[-1])

    async def get_stream(self, name: str) -> StreamRecord | None:
        """Return the registered stream `name`, or None (`RegistryUnavailableError`: being restored)."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hget(self._keys.streams, name)
            pipe.get(self._keys.epoch)
            raw, epoch = await pipe.execute()
        self._epoch_of(epoch)
        return StreamRecord.from_json(text(raw)) if raw is not None else None

    async def list_streams(self) -> list[StreamRecord]:
        """Return every registered stream, by name."""
        return list((await self.snapshot()).streams.values())

    # ---- queries -------------------------------------------------------------------------------

    async def create_query(
        self, query: QueryRecord, *, streams: Sequence[StreamRecord], admission: Admission | None = None
    ) -> int:
        """Register a validated query with its controls; return the new version.

        Args:
            query: the record to store (its `controls` become the control hash).
            streams: the registered streams the query was validated against; if any of them changed
                or disappeared since, nothing is written (`ConcurrentChangeError`, `NotFoundError`).
            admission: the cap and pending backlog, checked in the same atomic step as the write
                (`QueryCapError`, `PendingBacklogError`: nothing is logged or written).

        Raises `AlreadyExistsError` for a duplicate name. Leftover runtime keys of an earlier query of
        the same name (plan, statistics, status, re-plan request) are removed in the same step.
        """
        k = self._keys

        async def prepare(pipe: Pipeline) -> Logged:
            if await pipe.hexists(k.queries, query.name):
                raise AlreadyExistsError("query", query.name)
            if admission is not None:
                await _admit(pipe, k, admission)
            await _check_streams(pipe, k.streams, streams)
            stale = await _runtime_keys(pipe, k, query.name)

            stored, controls = query.to_json(), query.controls.to_hash()  # one form for Redis and the log

            def writes(p: Pipeline) -> None:
                p.hset(k.queries, query.name, stored)
                p.delete(k.control(query.name), *stale)
                p.hset(k.control(query.name), mapping=as_fields(controls))

            return Logged(writes, [LogEntry.query(k.prefix, query.name, stored, controls)])

        watch = [k.queries, k.streams, k.stats_index(query.name)]
        return int((await self._atomic(watch, prepare, logged=True))[-1])

    async def replace_query(
        self, query: QueryRecord, *, streams: Sequence[StreamRecord], expected_revision: int | None = None
    ) -> tuple[QueryRecord, int]:
        """Replace a query's definition; return the stored record and the new version.

        The revision is incremented and `created_at` kept; the controls restart from the new
        definition but keep `paused`; plan, statistics, status and any
        re-plan request are removed (joiners rebuild the query from scratch). Raises `NotFoundError`,
        and `ConcurrentChangeError` if `expected_revision` is given and differs from the stored one.
        """
        k = self._keys
        stored: list[QueryRecord] = []

        async def prepare(pipe: Pipeline) -> Logged:
            old = await _read_query(pipe, k, query.name, self._known_queries)
            if expected_revision is not None and old.revision != expected_revision:
                raise ConcurrentChangeError(f"query {query.name!r} was changed concurrently; retry")
            await _check_streams(pipe, k.streams, streams)
            stale = await _runtime_keys(pipe, k, query.name)
            controls = QueryControls.of(query.query, paused=old.controls.paused)
            new = QueryRecord(
                query=query.query,
                cql=query.cql,
                controls=controls,
                created_at=old.created_at,
                updated_at=query.updated_at,
                revision=old.revision + 1,
            )
            stored.append(new)
            value, fields = new.to_json(), controls.to_hash()  # one form for Redis and the log

            def writes(p: Pipeline) -> None:
                p.hset(k.queries, query.name, value)
                p.delete(k.control(query.name), *stale)
                p.hset(k.control(query.name), mapping=as_fields(fields))

            return Logged(writes, [LogEntry.query(k.prefix, query.name, value, fields)])

        watch = [k.queries, k.streams, k.control(query.name), k.stats_index(query.name)]
        version = int((await self._atomic(watch, prepare, logged=True))[-1])
        return stored[-1], version

    async def delete_query(self, name: str) -> int:
        """Remove a query, its controls, plan, statistics, status and re-plan request; return the version.

        Joiners drop the query's state (`RedisStateStore.drop_query`) when they see it gone.
        Raises `NotFoundError`.
        """
        k = self._keys

        async def prepare(pipe: Pipeline) -> Logged:
            await _read_query(pipe, k, name, self._known_queries)
            stale = await _runtime_keys(pipe, k, name)

            def writes(p: Pipeline) -> None:
                p.hdel(k.queries, name)
                p.delete(k.control(name), *stale)

            return Logged(writes, [LogEntry.tombstone(k.prefix, "query", name)])

        return int((await self._atomic([k.queries, k.stats_index(name)], prepare, logged=True))[-1])

    async def get_query(self, name: str) -> QueryRecord | None:
        """Return the registered query `name` with its controls, or None."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hget(self._keys.queries, name)
            pipe.hgetall(self._keys.control(name))
            pipe.get(self._keys.epoch)
            raw, controls, epoch = await pipe.execute()
        self._epoch_of(epoch)
        if raw is None:
            return None
        controls_read = QueryControls.from_hash(text_hash(controls))
        return QueryRecord.from_json(name, text(raw), controls_read, known=self._known_queries.get(name))

    async def list_queries(self) -> list[QueryRecord]:
        """Return every registered query, by name."""
        return list((await self.snapshot()).queries.values())

    async def set_controls(
        self, name: str, changes: Mapping[str, Any], *, expected_revision: int | None = None
    ) -> tuple[QueryControls, int]:
        """Write validated control attributes (name to JSON value); return the controls and the version.

        Raises `NotFoundError`; `ConcurrentChangeError` if `expected_revision` (the revision the
        changes were validated against) is no longer the stored one; `ValueError` for an attribute
        that is not writable.
        """
        k = self._keys
        result: list[QueryControls] = []

        async def prepare(pipe: Pipeline) -> Logged:
            old = await _read_query(pipe, k, name, self._known_queries)
            if expected_revision is not None and old.revision != expected_revision:
                raise ConcurrentChangeError(f"query {name!r} was changed concurrently; retry")
            new = old.controls.with_changes(changes)
            result.append(new)
            fields = {a: v for a, v in new.to_hash().items() if a in changes}
            stored = {**text_hash(await pipe.hgetall(k.control(name))), **fields}
            entry = LogEntry.query(k.prefix, name, text(await pipe.hget(k.queries, name)), stored)
            return Logged(
                lambda p: p.hset(k.control(name), mapping=as_fields(fields)) if fields else None, [entry]
            )

        version = int((await self._atomic([k.queries, k.control(name)], prepare, logged=True))[-1])
        return result[-1], version

    # ---- re-plan requests ------------------------------------------------------------------------

    async def request_replan(self, name: str) -> str:
        """Ask the joiners to re-plan query `name` now; return the request id. Raises `NotFoundError`."""
        k = self._keys
        request_id = uuid.uuid4().hex

        async def prepare(pipe: Pipeline) -> Writes:
            await _read_query(pipe, k, name, self._known_queries)
            return lambda p: p.set(k.replan(name), request_id)

        await self._atomic([k.queries], prepare)
        return request_id

    async def pending_replan(self, name: str) -> str | None:
        """Return the id of the re-plan request waiting for query `name`, or None."""
        raw = await self._redis.get(self._keys.replan(name))
        return text(raw) if raw is not None else None

    async def clear_replan(self, name: str, request_id: str) -> bool:
        """Delete the re-plan request if it is still `request_id` (joiner side); return whether it was."""
        key = self._keys.replan(name)
        cleared: list[bool] = []

        async def prepare(pipe: Pipeline) -> Writes:
            match = await pipe.get(key) in (request_id, request_id.encode())
            cleared.append(match)
            return lambda p: p.delete(key) if match else None

        await self._atomic([key], prepare, bump=False)
        return cleared[-1]

    # ---- snapshot ------------------------------------------------------------------------------

    async def snapshot(self) -> RegistrySnapshot:
        """Return every stream and query with its controls, as of one version (read atomically)."""
        k = self._keys

        async def prepare(pipe: Pipeline) -> Writes:
            names = sorted(texts(await pipe.hkeys(k.queries)))

            def reads(p: Pipeline) -> None:
                p.get(k.version)
                p.get(k.epoch)
                p.hgetall(k.streams)
                p.hgetall(k.queries)
                for n in names:
                    p.hgetall(k.control(n))

            return reads

        version, epoch, streams, queries, *controls = await self._atomic([k.queries], prepare, bump=False)
        epoch = self._epoch_of(epoch)
        streams, queries = text_hash(streams), text_hash(queries)
        names = sorted(queries)
        if len(names) != len(controls):
            raise ConcurrentChangeError("the query list changed during the snapshot")
        records, problems = _queries(
            queries, {n: text_hash(c) for n, c in zip(names, controls, strict=True)}, self._known_queries
        )
        self._known_queries = records
        return RegistrySnapshot(
            version=int(text(version)) if version is not None else 0,
            streams={n: StreamRecord.from_json(streams[n]) for n in sorted(streams)},
            queries=records,
            problems=problems,
            epoch=epoch,
        )


def _queries(
    raw: Mapping[str, str],
    controls: Mapping[str, Mapping[str, str]],
    known: Mapping[str, QueryRecord] | None = None,
) -> tuple[dict[str, QueryRecord], dict[str, str]]:
    """Read the stored queries back, each parsed unless `known` holds it read from the same JSON;
    one that no longer parses is reported, never fatal."""
    records: dict[str, QueryRecord] = {}
    problems: dict[str, str] = {}
    known = known or {}
    for name in sorted(raw):
        try:
            records[name] = QueryRecord.from_json(
                name, raw[name], QueryControls.from_hash(controls.get(name, {})), known=known.get(name)
            )
        except (QueryError, ValueError) as exc:
            problems[name] = str(exc)
    return records, problems


async def _read_query(
    pipe: Pipeline, keys: RegistryKeys, name: str, known: Mapping[str, QueryRecord]
) -> QueryRecord:
    """Return the stored query `name` (parsed unless `known` holds it read from the same JSON)."""
    raw = await pipe.hget(keys.queries, name)
    if raw is None:
        raise NotFoundError("query", name)
    controls = QueryControls.from_hash(text_hash(await pipe.hgetall(keys.control(name))))
    return QueryRecord.from_json(name, text(raw), controls, known=known.get(name))


async def _admit(pipe: Pipeline, keys: RegistryKeys, admission: Admission) -> None:
    """Raise the `AdmissionError` that refuses one more query (the query hash is watched)."""
    names = texts(await pipe.hkeys(keys.queries))
    laid_out = int(await pipe.exists(*(keys.status(n) for n in names))) if names else 0
    refusal = admission.refusal(registered=len(names), pending=len(names) - laid_out)
    if refusal is not None:
        raise refusal


async def _check_streams(pipe: Pipeline, key: str, streams: Sequence[StreamRecord]) -> None:
    for stream in streams:
        raw = await pipe.hget(key, stream.name)
        if raw is None:
            raise NotFoundError("stream", stream.name)
        if StreamRecord.from_json(text(raw)) != stream:
            raise ConcurrentChangeError(f"stream {stream.name!r} changed while the query was validated")


async def _runtime_keys(pipe: Pipeline, keys: RegistryKeys, name: str) -> list[str]:
    partitions = texts(await pipe.smembers(keys.stats_index(name)))
    return [
        keys.replan(name),
        keys.plan(name),
        keys.status(name),
        keys.stats_index(name),
        *(keys.stats(name, int(p)) for p in partitions),
    ]
