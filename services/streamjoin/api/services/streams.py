"""Register, list and remove streams; check their JSON schema."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from streamjoin.api.errors import ApiError
from streamjoin.api.schemas import StreamCreate, StreamPublic
from streamjoin.formats import avro_fields, check_avro_schema
from streamjoin.names import check_field
from streamjoin.query.parse import QueryError, parse_key
from streamjoin.registry import NotFoundError, RegistryStore, StreamRecord

__all__ = ["StreamService", "check_stream", "schema_fields"]


def schema_fields(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """Return the declared top-level fields of a record schema (name to sub-schema), None if open.

    A schema without `properties` declares nothing, so any field may be named.
    """
    if schema is None:
        return None
    fields = avro_fields(schema)
    if fields is not None:
        return fields
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else None


def _check_key(body: StreamCreate) -> None:
    if body.key is not None:
        try:
            parse_key(body.key, body.name, "key")
        except QueryError as exc:
            raise ApiError(422, "invalid_stream", exc.message, field="key") from None


def check_stream_avro_schema(schema: Mapping[str, Any], timestamp: str | None) -> None:
    """Raise `ApiError` 422 unless `schema` is an Avro record schema with `timestamp` a number field."""
    try:
        check_avro_schema(schema)
    except ValueError as exc:
        raise ApiError(422, "invalid_stream", str(exc), field="schema") from None
    fields = avro_fields(schema) or {}
    if timestamp is not None:
        if timestamp not in fields:
            raise ApiError(
                422, "invalid_stream", f"{timestamp!r} is not a field of the schema", field="timestamp"
            )
        kind = fields[timestamp]
        kinds = (
            set(kind) if isinstance(kind, list) else {kind.get("type") if isinstance(kind, Mapping) else kind}
        )
        if not kinds & {"int", "long", "float", "double"}:
            raise ApiError(422, "invalid_stream", "the timestamp field must be a number", field="timestamp")


def _check_schema(body: StreamCreate) -> None:
    schema = body.json_schema
    if schema is None:
        return
    if body.format == "avro":
        check_stream_avro_schema(schema, body.timestamp)
        return
    kind = schema.get("type")
    if kind is not None and kind != "object":
        raise ApiError(
            422,
            "invalid_stream",
            'records are JSON objects: schema.type must be "object"',
            field="schema.type",
        )
    properties = schema.get("properties")
    if properties is not None and (
        not isinstance(properties, Mapping)
        or not all(isinstance(v, Mapping | bool) for v in properties.values())
    ):
        raise ApiError(422, "invalid_stream", "must map field names to schemas", field="schema.properties")
    fields = schema_fields(schema)
    if body.key is not None and fields is not None and body.key not in fields:
        raise ApiError(422, "invalid_stream", f"{body.key!r} is not a field of the schema", field="key")
    if body.timestamp is not None and fields is not None:
        if body.timestamp not in fields:
            raise ApiError(
                422, "invalid_stream", f"{body.timestamp!r} is not a field of the schema", field="timestamp"
            )
        declared = fields[body.timestamp]
        kind = declared.get("type") if isinstance(declared, Mapping) else None
        kinds = (
            {kind}
            if isinstance(kind, str)
            else {k for k in kind if isinstance(k, str)}
            if isinstance(kind, list)
            else None
        )
        if kinds is not None and not kinds & {"number", "integer"}:
            raise ApiError(422, "invalid_stream", "the timestamp field must be a number", field="timestamp")


def check_stream(body: StreamCreate) -> None:
    """Raise `ApiError` 422 if `body` (valid as a request) cannot be registered: its key or schema."""
    _check_key(body)
    _check_schema(body)
    for name in schema_fields(body.json_schema) or ():  # each can be named by a query: the field rule
        try:
            check_field(name)
        except ValueError as exc:
            raise ApiError(422, "invalid_stream", str(exc), field="schema") from None


class StreamService:
    """Streams over the registry."""

    def __init__(self, store: RegistryStore) -> None:
        """Serve streams from `store`."""
        self._store = store

    async def create(self, body: StreamCreate) -> StreamPublic:
        """Register a stream; raise `ApiError` 422 for a bad schema, `AlreadyExistsError` for a duplicate."""
        check_stream(body)
        record = StreamRecord(
            name=body.name,
            topic=body.topic,
            timestamp=body.timestamp,
            schema=body.json_schema,
            description=body.description,
            created_at=round(time.time(), 3),
            expected_rate=body.expected_rate,
            record_bytes=body.record_bytes,
            key=body.key,
            format=body.format,
        )
        await self._store.create_stream(record)
        return _public(record, [])

    async def list(self) -> list[StreamPublic]:
        """Return every stream, by name."""
        snapshot = await self._store.snapshot()
        return [_public(s, _users(snapshot.queries.values(), s.name)) for s in snapshot.streams.values()]

    async def get(self, name: str) -> StreamPublic:
        """Return one stream; raise `NotFoundError`."""
        snapshot = await self._store.snapshot()
        stream = snapshot.streams.get(name)
        if stream is None:
            raise NotFoundError("stream", name)
        return _public(stream, _users(snapshot.queries.values(), name))

    async def delete(self, name: str) -> None:
        """Remove a stream no query reads; raise `NotFoundError` or `InUseError`."""
        await self._store.delete_stream(name)


def _users(queries: Any, name: str) -> list[str]:
    return sorted(q.name for q in queries if name in q.streams)


def _public(stream: StreamRecord, users: list[str]) -> StreamPublic:
    return StreamPublic(
        name=stream.name,
        topic=stream.topic,
        timestamp=stream.timestamp,
        schema=dict(stream.schema) if stream.schema is not None else None,
        description=stream.description,
        created_at=stream.created_at,
        expected_rate=stream.expected_rate,
        record_bytes=stream.record_bytes,
        key=stream.key,
        format=stream.format,
        queries=users,
    )
