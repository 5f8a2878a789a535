"""The Avro schema of a query's output, derived at registration when the query gives none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamjoin.formats import SchemaDerivationError, check_avro_schema, result_schema
from streamjoin.query import QueryError
from streamjoin.registry import StreamRecord

__all__ = ["derive_output_schema"]


def derive_output_schema(spec: dict[str, Any], streams: Mapping[str, StreamRecord]) -> None:
    """Fill `output.schema` of an Avro output from the inputs' schemas (docs/formats.md); check a
    given one. `spec` holds resolved inputs; anything malformed is left to `parse_query`.

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
    select = spec.get("select")
    pairs = None
    if isinstance(select, list):
        pairs = [tuple(s.split(".", 1)) for s in select if isinstance(s, str) and "." in s]
    try:
        schema = result_schema(str(spec.get("name")), names, {n: streams[n].schema for n in names}, pairs)  # type: ignore[arg-type]
    except SchemaDerivationError as exc:
        raise QueryError("output.schema", str(exc)) from None
    spec["output"] = {**output, "schema": schema}
