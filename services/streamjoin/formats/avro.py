"""Avro records by schema id (`AvroReader`) and of one schema (`AvroWriter`), with fastavro.

A reader keeps each writer schema it has seen, parsed, by id: a producer that registers a new
(compatible) schema mid-stream only costs one registry call. Logical types are read as their
underlying type (a `timestamp-millis` is the `long` a query compares), so every decoded record is
plain JSON data.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import fastavro
from fastavro.types import Schema

from streamjoin.formats.wire import WireFormatError, frame, unframe
from streamjoin.schema_registry import SchemaNotFound, SchemaRegistry

__all__ = ["AvroReader", "AvroWriter", "UndecodableRecord", "check_avro_schema", "strip_logical_types"]


class UndecodableRecord(ValueError):
    """A record that cannot be read: not framed, an unknown schema id, or a body that does not match."""


def strip_logical_types(schema: Any) -> Any:
    """Return `schema` without `logicalType` annotations (each read as its underlying type).

    >>> strip_logical_types({"type": "long", "logicalType": "timestamp-millis"})
    {'type': 'long'}
    """
    if isinstance(schema, Mapping):
        return {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [strip_logical_types(s) for s in schema]
    return schema


def check_avro_schema(schema: Mapping[str, Any]) -> None:
    """Raise ValueError (fastavro's reason) unless `schema` is a valid Avro record schema."""
    if schema.get("type") != "record" or not isinstance(schema.get("fields"), list):
        raise ValueError('must be an Avro record schema ({"type": "record", "name": ..., "fields": [...]})')
    try:
        fastavro.parse_schema(dict(schema), _write_hint=False)
    except Exception as exc:  # fastavro raises several types (SchemaParseException, KeyError, ...)
        raise ValueError(f"not a valid Avro schema: {exc}") from exc


def _fields_of(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the `fields` of a record schema."""
    fields: list[dict[str, Any]] = schema["fields"]
    return fields


def _parse(schema: Mapping[str, Any]) -> Schema:
    return fastavro.parse_schema(strip_logical_types(dict(schema)))  # the hint: not parsed again per record


class AvroReader:
    """Decode framed Avro records with the writer schema their id names in `registry`.

    Registry errors other than `SchemaNotFound` (`RegistryUnavailable`) propagate: the caller
    retries later instead of refusing records it could read then.
    """

    def __init__(self, registry: SchemaRegistry) -> None:
        self._registry = registry
        self._schemas: dict[int, Schema] = {}
        self._unknown: dict[int, str] = {}

    @property
    def schema_ids(self) -> frozenset[int]:
        """Return the ids of the writer schemas read so far."""
        return frozenset(self._schemas)

    def read(self, raw: bytes | None) -> Any:
        """Return the decoded value of framed record `raw`.

        Raises:
            UndecodableRecord: with the reason.
        """
        if raw is None:
            raise UndecodableRecord("empty value (tombstone)")
        try:
            schema_id, body = unframe(raw)
        except WireFormatError as exc:
            raise UndecodableRecord(str(exc)) from None
        schema = self._schemas.get(schema_id)
        if schema is None:
            schema = self._fetch(schema_id)
        buffer = io.BytesIO(body)
        try:
            value = fastavro.schemaless_reader(buffer, schema, None)
        except Exception as exc:  # EOFError, UnicodeDecodeError, IndexError, ... on a bad body
            raise UndecodableRecord(f"Avro body does not match schema id {schema_id}: {exc!r}") from None
        if buffer.tell() != len(body):
            raise UndecodableRecord(
                f"Avro body does not match schema id {schema_id}: {len(body) - buffer.tell()} bytes left over"
            )
        return value

    def _fetch(self, schema_id: int) -> Schema:
        if schema_id in self._unknown:
            raise UndecodableRecord(self._unknown[schema_id])
        try:
            schema = _parse(self._registry.schema(schema_id))
        except SchemaNotFound as exc:
            self._unknown[schema_id] = f"unknown schema id {schema_id}: {exc}"
            raise UndecodableRecord(self._unknown[schema_id]) from None
        except (ValueError, KeyError, TypeError) as exc:  # the registry holds a schema fastavro refuses
            self._unknown[schema_id] = f"schema id {schema_id} is not a usable Avro schema: {exc}"
            raise UndecodableRecord(self._unknown[schema_id]) from None
        self._schemas[schema_id] = schema
        return schema


class AvroWriter:
    """Encode values with one schema, framed with its id."""

    def __init__(self, schema: Mapping[str, Any], schema_id: int) -> None:
        self.schema_id = schema_id
        self._source = strip_logical_types(dict(schema))
        self._schema = _parse(schema)
        self._header = frame(schema_id, b"")

    def write_prefix(self, leading: Mapping[str, Any]) -> bytes:
        """Return how every record whose leading fields are `leading` starts: the frame and those
        fields' encodings (Avro writes a record's fields in schema order, with no separators).

        Raises:
            ValueError: `leading` are not the schema's first fields.
        """
        fields: list[dict[str, Any]] = list(_fields_of(self._source)[: len(leading)])
        if [f["name"] for f in fields] != list(leading):
            raise ValueError(f"{list(leading)} are not the first fields of the schema")
        buffer = io.BytesIO()
        buffer.write(self._header)
        for field in fields:
            fastavro.schemaless_writer(
                buffer, fastavro.parse_schema(field["type"], _write_hint=False), leading[field["name"]]
            )
        return buffer.getvalue()

    def write(self, value: Mapping[str, Any]) -> bytes:
        """Return `value` framed and Avro-encoded.

        Raises:
            ValueError: `value` does not match the schema (with fastavro's reason).
        """
        buffer = io.BytesIO()
        buffer.write(self._header)
        try:
            fastavro.schemaless_writer(buffer, self._schema, dict(value))
        except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as exc:
            raise ValueError(f"does not match the output schema (id {self.schema_id}): {exc}") from exc
        return buffer.getvalue()
