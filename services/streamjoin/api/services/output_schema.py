"""The Avro schema of a query's output, derived at registration when the query gives none."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from streamjoin.formats import SchemaDerivationError, check_avro_schema, columns_schema, result_schema
from streamjoin.query import QueryError
from streamjoin.query.columns import parse_columns
from streamjoin.registry import StreamRecord
from streamjoin.schema_registry import SchemaRegistry, SchemaRegistryError, subject_of

__all__ = ["derive_output_schema", "registry_schemas_of"]


async def registry_schemas_of(
    raw: Mapping[str, Any], streams: Mapping[str, StreamRecord], registry: SchemaRegistry | None
) -> dict[str, Mapping[str, Any]]:
    """Return the registry's latest schema (`<topic>-value`) of each Avro stream registered without a
    schema, when the query body `raw` asks for Avro output without a schema; else nothing."""
    output = raw.get("output")
    if registry is None or not isinstance(output, Mapping) or output.get("format") != "avro":
        return {}
    if output.get("schema") is not None:
        return {}
    found: dict[str, Mapping[str, Any]] = {}
    for name, stream in streams.items():
        if stream.format == "avro" and stream.schema is None:
            try:
                _, schema = await asyncio.to_thread(registry.latest, subject_of(stream.topic))
            except SchemaRegistryError:  # no version, or no registry now: the derivation says what is missing
                continue
            found[name] = schema
    return found


def derive_output_schema(
    spec: dict[str, Any],
    streams: Mapping[str, StreamRecord],
    registry_schemas: Mapping[str, Mapping[str, Any]],
) -> None:
    """Fill `output.schema` of an Avro output from the inputs' schemas (docs/formats.md); check a
    given one. `spec` holds resolved inputs; anything malformed is left to `parse_query`.
    `registry_schemas`: the registry's schemas of Avro streams registered without one.

    Raises:
        QueryError: the schema cannot be derived, or the given one is not valid Avro.
    """
    output, inputs = spec.get("output"), spec.get("inputs")
    if not isinstance(output, Mapping) or output.get("format") != "avro" or not isinstance(inputs, list):
        return
    given = output.get("schema")
    if given is not None:
        if isinstance(given, Mapping):
            try:
                check_avro_schema(given)
            except ValueError as exc:
                raise QueryError("output.schema", str(exc)) from None
        return
    names = [i["stream"] for i in inputs if isinstance(i, Mapping) and i.get("stream") in streams]
    if spec.get("columns") is not None:
        columns = parse_columns(spec["columns"], frozenset(names), select=spec.get("select")) or ()
        schemas = {n: streams[n].schema or registry_schemas.get(n) for n in names}
        try:
            spec["output"] = {**output, "schema": columns_schema(str(spec.get("name")), schemas, columns)}
        except SchemaDerivationError as exc:
            raise QueryError("output.schema", str(exc)) from None
        return
    select = spec.get("select")
    pairs: list[tuple[str, str]] | None = None
    if isinstance(select, list):
        pairs = [_pair(s) for s in select if isinstance(s, str) and "." in s]
    schemas = {n: streams[n].schema or registry_schemas.get(n) for n in names}
    try:
        schema = result_schema(str(spec.get("name")), names, schemas, pairs)
    except SchemaDerivationError as exc:
        raise QueryError("output.schema", str(exc)) from None
    spec["output"] = {**output, "schema": schema}


def _pair(ref: str) -> tuple[str, str]:
    stream, _, field = ref.partition(".")
    return stream, field
