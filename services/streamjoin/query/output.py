"""Formats in the query JSON: an input's `format`, and the `output` section's format and Avro schema."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from streamjoin.query.errors import QueryError
from streamjoin.query.grammar import (
    INPUT_FORMATS,
    OUTPUT_FIELDS,
    OUTPUT_FORMATS,
    InputFormat,
    OutputFormat,
    one_of,
)
from streamjoin.query.model import QueryDef

__all__ = ["dump_output", "parse_input_format", "parse_output_format"]


def parse_input_format(spec: Mapping[str, Any], where: str) -> InputFormat:
    """Return the `format` of input `spec` (at `where`): `json` (default) or `avro`.

    >>> parse_input_format({"stream": "a", "format": "avro"}, "inputs[0]")
    'avro'
    """
    fmt = spec.get("format", "json")
    if fmt not in INPUT_FORMATS:
        raise QueryError(f"{where}.format", f"must be {one_of(INPUT_FORMATS)}")
    return cast(InputFormat, fmt)


def parse_output_format(output: Mapping[str, Any]) -> tuple[OutputFormat, str | None]:
    """Return the format and the Avro schema (canonical JSON text) of the `output` section.

    >>> parse_output_format({"topic": "out", "format": "flat"})
    ('flat', None)

    Raises:
        QueryError: an unknown field or format, a schema without `avro`, or `avro` without a record
            schema (the control plane derives one from the inputs' schemas when none is given).
    """
    unknown = set(output) - OUTPUT_FIELDS
    if unknown:
        raise QueryError("output", f"unknown field(s) {sorted(unknown)}")
    fmt = output.get("format", "envelope")
    if fmt not in OUTPUT_FORMATS:
        raise QueryError("output.format", f"must be {one_of(OUTPUT_FORMATS)}")
    schema = output.get("schema")
    if fmt != "avro":
        if schema is not None:
            raise QueryError("output.schema", 'only an "avro" output has a schema')
        return cast(OutputFormat, fmt), None
    if (
        not isinstance(schema, Mapping)
        or schema.get("type") != "record"
        or not isinstance(schema.get("fields"), list)
    ):
        raise QueryError(
            "output.schema",
            "Avro output needs an Avro record schema (the control plane derives it from the inputs' schemas)",
        )
    return "avro", json.dumps(schema, sort_keys=True, separators=(",", ":"))


def dump_output(query: QueryDef) -> dict[str, Any]:
    """Return the `output` section of `query` (format and schema only when not the envelope)."""
    out: dict[str, Any] = {"topic": query.output_topic}
    if query.output_format != "envelope":
        out["format"] = query.output_format
    if query.output_schema is not None:
        out["schema"] = json.loads(query.output_schema)
    return out
