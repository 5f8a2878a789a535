"""The Avro schema of a query's flat output rows, derived from its inputs' schemas.

A result row is `query`, `ts`, `id`, then `<stream>_<field>` for each field of each input (the
`select`ed ones, or every field its schema declares). A field's type comes from its stream's
schema: an Avro stream's record schema as it is, a JSON stream's JSON Schema `properties` mapped
(`integer` → `long`, `number` → `double`, `string`, `boolean`); every field is nullable, since a
record may omit it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from streamjoin.query.columns import Column, Item, Star, check_types
from streamjoin.query.expr import Ref

__all__ = ["SchemaDerivationError", "avro_fields", "columns_schema", "result_schema"]

_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_JSON_TYPES = {"integer": "long", "number": "double", "string": "string", "boolean": "boolean"}


class SchemaDerivationError(ValueError):
    """The inputs' schemas do not tell a field's Avro type (the message says which and why)."""


def avro_fields(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Return the fields an Avro record schema declares (name to type), None if not a record.

    >>> avro_fields({"type": "record", "name": "o", "fields": [{"name": "id", "type": "long"}]})
    {'id': 'long'}
    """
    if schema is None or schema.get("type") != "record" or not isinstance(schema.get("fields"), list):
        return None
    return {f["name"]: f["type"] for f in schema["fields"] if isinstance(f, Mapping) and "name" in f}


def _json_type(stream: str, name: str, sub: Any) -> Any:
    kind = sub.get("type") if isinstance(sub, Mapping) else None
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    avro = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
    if avro is None:
        raise SchemaDerivationError(
            f"field {stream}.{name}: JSON Schema type {kind!r} has no Avro counterpart "
            "(integer, number, string, boolean); give output.schema"
        )
    return avro


def _nullable(avro_type: Any) -> list[Any]:
    if isinstance(avro_type, list):
        return avro_type if "null" in avro_type else ["null", *avro_type]
    return ["null", avro_type]


def _declared(stream: str, schema: Mapping[str, Any] | None) -> dict[str, Any]:
    fields = avro_fields(schema)
    if fields is not None:
        return fields
    properties = schema.get("properties") if schema is not None else None
    if not isinstance(properties, Mapping):
        raise SchemaDerivationError(
            f"stream {stream!r} has no schema with fields (an Avro record or a JSON Schema with "
            "properties): Avro output needs one for every input, or give output.schema"
        )
    return {name: _json_type(stream, name, sub) for name, sub in properties.items()}


def result_schema(
    query: str,
    streams: Sequence[str],
    schemas: Mapping[str, Mapping[str, Any] | None],
    select: Sequence[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """Return the Avro record schema of query `query`'s flat rows.

    `schemas`: each input stream's schema; `select`: the (stream, field) pairs selected, or None
    for every declared field.

    >>> schema = result_schema("q", ["o", "p"], {"o": {"properties": {"id": {"type": "integer"}}},
    ...     "p": {"type": "record", "name": "P", "fields": [{"name": "total", "type": "double"}]}})
    >>> [(f["name"], f["type"]) for f in schema["fields"]][3:]
    [('o_id', ['null', 'long']), ('p_total', ['null', 'double'])]

    Raises:
        SchemaDerivationError: a field's type is unknown or a name is not a valid Avro name.
    """
    declared = {s: _declared(s, schemas.get(s)) for s in streams}
    pairs = select if select is not None else [(s, f) for s in streams for f in declared[s]]
    fields: list[dict[str, Any]] = [
        {"name": "query", "type": "string"},
        {"name": "ts", "type": ["long", "double"]},
        {"name": "id", "type": "string"},
    ]
    for stream, field in pairs:
        name = f"{stream}_{field}"
        if not _AVRO_NAME.match(name):
            raise SchemaDerivationError(f"{stream}.{field}: {name!r} is not a valid Avro field name")
        if field not in declared[stream]:
            raise SchemaDerivationError(f"{stream}.{field}: not a field of stream {stream!r}'s schema")
        fields.append({"name": name, "type": _nullable(declared[stream][field]), "default": None})
    record = re.sub(r"[^A-Za-z0-9_]", "_", query)
    if not _AVRO_NAME.match(record):
        record = f"q_{record}"
    return {"type": "record", "name": f"{record}_result", "namespace": "streamjoin", "fields": fields}


_STATIC_TYPES: Mapping[str, Any] = {
    "number": ["null", "long", "double"],
    "string": ["null", "string"],
    "bool": ["null", "boolean"],
    "null": "null",
    "any": ["null", "boolean", "long", "double", "string"],
}


def columns_schema(
    query: str, schemas: Mapping[str, Mapping[str, Any] | None], columns: Sequence[Item]
) -> dict[str, Any]:
    """Return the Avro record schema of the rows of query `query`, whose select list is `columns`.

    `query`, `ts`, `id`, then each column: `s.*` gives every field `s`'s schema declares, as
    `<stream>_<field>` with its type; a one-level field path its field's declared type; any other
    expression the type its operator returns (a number `["null", "long", "double"]`, a string, a
    boolean), or when that is only known at run time, a union of every JSON scalar type.

    >>> from streamjoin.query.columns import Column, Star
    >>> from streamjoin.query.expr import Call, Lit, Ref
    >>> s = columns_schema("q", {"o": {"properties": {"id": {"type": "integer"}}}},
    ...     [Star("o"), Column("gross", Call("*", (Ref("o", ("amount",)), Lit(1.2))))])
    >>> [(f["name"], f["type"]) for f in s["fields"]][3:]
    [('o_id', ['null', 'long']), ('gross', ['null', 'long', 'double'])]

    Raises:
        SchemaDerivationError: a stream without a schema where one is needed, an unknown field, or a
            name that is not a valid Avro name.
    """
    explicit = {c.name for c in columns if isinstance(c, Column)}
    fields: list[dict[str, Any]] = [
        {"name": "query", "type": "string"},
        {"name": "ts", "type": ["long", "double"]},
        {"name": "id", "type": "string"},
    ]
    for item in columns:
        if isinstance(item, Star):
            typed = {
                f"{item.stream}_{k}": t for k, t in _declared(item.stream, schemas.get(item.stream)).items()
            }
            typed = {k: t for k, t in typed.items() if k not in explicit}
        elif isinstance(item.expr, Ref) and len(item.expr.path) == 1:
            stream, field = item.expr.stream, item.expr.path[0]
            declared = _declared(stream, schemas.get(stream))
            if field not in declared:
                raise SchemaDerivationError(f"{stream}.{field}: not a field of stream {stream!r}'s schema")
            typed = {item.name: declared[field]}
        else:
            typed = {item.name: _STATIC_TYPES[check_types(item.expr, item.name)]}
        for name, avro_type in typed.items():
            if not _AVRO_NAME.match(name):
                raise SchemaDerivationError(
                    f"column {name!r} is not a valid Avro field name: name it with AS"
                )
            fields.append({"name": name, "type": _nullable(avro_type), "default": None})
    record = re.sub(r"[^A-Za-z0-9_]", "_", query)
    if not _AVRO_NAME.match(record):
        record = f"q_{record}"
    return {"type": "record", "name": f"{record}_result", "namespace": "streamjoin", "fields": fields}
