"""Turn a registration body (query JSON or CQL) into a validated, normalised query definition.

Checks, in order, each failing with a `QueryError` that names the field: CQL syntax (field `cql`,
with the position); every input is a registered stream (`inputs[i].stream`) whose topic and timestamp
and key the query may not contradict; the query itself (`parse_query`: windows > 0, operators, a connected
join graph, ...); every field named exists when its stream has a schema; the output and dead-letter
topics are not inputs. Nothing is written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamjoin.api.services.output_schema import derive_output_schema
from streamjoin.api.services.streams import schema_fields
from streamjoin.query import FieldRef, QueryDef, QueryError, RowsWindow, parse_query
from streamjoin.query.columns import Column
from streamjoin.query.cql import parse_cql
from streamjoin.query.expr import refs_of
from streamjoin.query.sql import parse_sql
from streamjoin.query.streams import resolve_inputs
from streamjoin.registry import StreamRecord

__all__ = ["Compiled", "compile_query"]

_CQL_REPLACES = ("inputs", "where", "select", "within")
_SQL_REPLACES = (*_CQL_REPLACES, "filter", "shedding", "columns")


@dataclass(frozen=True, slots=True)
class Compiled:
    """A query ready to store: its definition (parsed once, here) and the streams it was checked against."""

    query: QueryDef
    cql: str | None
    streams: tuple[StreamRecord, ...]


def compile_query(
    raw: Mapping[str, Any],
    cql: str | None,
    streams: Mapping[str, StreamRecord],
    sql: str | None = None,
    registry_schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> Compiled:
    """Validate a query given as JSON fields (`raw`) and optional CQL or SQL text against `streams`.

    `registry_schemas`: the schema registry's latest schema of Avro streams registered without one
    (`registry_schemas_of`), for the derived schema of an Avro output.

    Raises:
        QueryError: the first problem found, with the field it is in.
    """
    spec = dict(raw)
    if sql is not None:
        given = [f for f in _SQL_REPLACES if f in spec] + (["cql"] if cql is not None else [])
        if given:
            raise QueryError(
                "sql", f"give either sql or {'/'.join(_SQL_REPLACES)}/cql, not both (found {given})"
            )
        spec.update(parse_sql(sql, streams))
    elif cql is not None:
        given = [f for f in _CQL_REPLACES if f in spec]
        if given:
            raise QueryError("cql", f"give either cql or {'/'.join(_CQL_REPLACES)}, not both (found {given})")
        spec.update(parse_cql(cql, streams))
    used = [streams[name] for name in resolve_inputs(spec, streams)]
    derive_output_schema(spec, streams, registry_schemas or {})
    query = parse_query(spec)
    _check_fields(query, spec, streams)
    _check_topics(query)
    return Compiled(query, cql, tuple(used))


def _check_field(ref: FieldRef, where: str, streams: Mapping[str, StreamRecord]) -> None:
    fields = schema_fields(streams[ref.stream].schema)
    if fields is not None and ref.field not in fields:
        raise QueryError(
            where,
            f"unknown field {ref.field!r} of stream {ref.stream!r}; its schema declares {sorted(fields)}",
        )


def _check_fields(query: QueryDef, spec: Mapping[str, Any], streams: Mapping[str, StreamRecord]) -> None:
    """Check every field the query names against its stream's schema, if the stream has one."""
    for i, item in enumerate(query.inputs):
        if isinstance(item.window, RowsWindow) and item.window.partition_by is not None:
            ref = FieldRef(item.stream, item.window.partition_by)
            _check_field(ref, f"inputs[{i}].window.partition_by", streams)
    for i, predicate in enumerate(query.where):
        for side, operand in ((0, predicate.left), (2, predicate.right)):
            if isinstance(operand, FieldRef):
                _check_field(operand, f"where[{i}][{side}]", streams)
    for i, ref in enumerate(query.select or ()):
        _check_field(ref, f"select[{i}]", streams)
    for path in refs_of(query.filter) if query.filter is not None else ():
        _check_field(FieldRef(path.stream, path.path[0]), "filter", streams)
    for i, column in enumerate(query.columns or ()):
        for path in refs_of(column.expr) if isinstance(column, Column) else ():
            _check_field(FieldRef(path.stream, path.path[0]), f"columns[{i}]", streams)


def _check_topics(query: QueryDef) -> None:
    inputs = {i.topic for i in query.inputs}
    if query.output_topic in inputs:
        raise QueryError("output.topic", f"{query.output_topic!r} is an input topic of the query")
    dead = query.dead_letter_topic
    if dead is not None and (dead in inputs or dead == query.output_topic):
        raise QueryError("dead_letter.topic", f"{dead!r} is an input or the output topic of the query")
