"""Unit tests of the formats: the wire format, Avro by schema id, the derived result schema, the
`output` section of the query JSON, and the flat row (shared by replay and the joiner)."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from streamjoin.engine.output import flatten
from streamjoin.formats import (
    AvroReader,
    AvroWriter,
    SchemaDerivationError,
    WireFormatError,
    frame,
    result_schema,
    unframe,
)
from streamjoin.formats.avro import UndecodableRecord
from streamjoin.query import QueryError, parse_query
from streamjoin.query.dump import dump_query
from streamjoin.schema_registry import MemorySchemaRegistry, SchemaNotFound

V1 = {
    "type": "record",
    "name": "o",
    "fields": [{"name": "id", "type": "long"}, {"name": "ts", "type": "long"}],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "note", "type": "string", "default": ""}]}


def _body(schema: dict[str, Any], value: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), value)
    return buffer.getvalue()


def test_wire_format_round_trip_and_refusals() -> None:
    raw = frame(258, b"xyz")
    assert raw == b"\x00\x00\x00\x01\x02xyz"
    schema_id, body = unframe(raw)
    assert (schema_id, bytes(body)) == (258, b"xyz")
    with pytest.raises(WireFormatError, match="magic byte 123"):
        unframe(b'{"id": 1}')
    with pytest.raises(WireFormatError, match="shorter"):
        unframe(b"\x00\x00")
    with pytest.raises(ValueError, match="4 bytes"):
        frame(1 << 32, b"")


def test_reader_follows_each_records_schema_id_and_caches_it() -> None:
    registry = MemorySchemaRegistry()
    first = registry.register("o-value", V1)
    reader = AvroReader(registry)
    assert reader.read(frame(first, _body(V1, {"id": 1, "ts": 5}))) == {"id": 1, "ts": 5}
    second = registry.register("o-value", V2)  # a compatible writer schema, mid-stream
    assert reader.read(frame(second, _body(V2, {"id": 2, "ts": 6, "note": "x"}))) == {
        "id": 2,
        "ts": 6,
        "note": "x",
    }
    assert reader.read(frame(first, _body(V1, {"id": 3, "ts": 7}))) == {"id": 3, "ts": 7}
    assert reader.schema_ids == {first, second}


def test_reader_refuses_unknown_ids_bad_bodies_and_tombstones() -> None:
    registry = MemorySchemaRegistry()
    schema_id = registry.register("o-value", V1)
    reader = AvroReader(registry)
    with pytest.raises(UndecodableRecord, match="unknown schema id 99"):
        reader.read(frame(99, b"\x02\x02"))
    with pytest.raises(UndecodableRecord, match="does not match schema id"):
        reader.read(frame(schema_id, b"\x02"))  # ends before `ts`
    with pytest.raises(UndecodableRecord, match="1 bytes left over"):
        reader.read(frame(schema_id, _body(V1, {"id": 1, "ts": 5}) + b"\x00"))
    with pytest.raises(UndecodableRecord, match="magic byte"):
        reader.read(json.dumps({"id": 1, "ts": 5}).encode())
    with pytest.raises(UndecodableRecord, match="tombstone"):
        reader.read(None)


def test_logical_types_read_as_their_underlying_type() -> None:
    schema = {
        "type": "record",
        "name": "t",
        "fields": [{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}],
    }
    registry = MemorySchemaRegistry()
    schema_id = registry.register("t-value", schema)
    assert AvroReader(registry).read(frame(schema_id, b"\x14")) == {"ts": 10}


def test_writer_frames_with_its_id_and_refuses_values_off_schema() -> None:
    registry = MemorySchemaRegistry()
    schema_id = registry.register("o-value", V1)
    raw = AvroWriter(V1, schema_id).write({"id": 4, "ts": 9})
    assert unframe(raw)[0] == schema_id
    assert AvroReader(registry).read(raw) == {"id": 4, "ts": 9}
    with pytest.raises(ValueError, match="does not match the output schema"):
        AvroWriter(V1, schema_id).write({"id": "four", "ts": 9})


def test_memory_registry_unknown_subject() -> None:
    with pytest.raises(SchemaNotFound):
        MemorySchemaRegistry().latest("nothing-value")


def test_result_schema_from_avro_and_json_schemas() -> None:
    json_p = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "total": {"type": ["number", "null"]}},
    }
    schema = result_schema("q-1", ["o", "p"], {"o": V1, "p": json_p})
    fastavro.parse_schema(schema)
    assert schema["name"] == "q_1_result"
    assert [(f["name"], f["type"]) for f in schema["fields"]] == [
        ("query", "string"),
        ("ts", ["long", "double"]),
        ("id", "string"),
        ("o_id", ["null", "long"]),
        ("o_ts", ["null", "long"]),
        ("p_id", ["null", "long"]),
        ("p_total", ["null", "double"]),
    ]
    selected = result_schema("q", ["o", "p"], {"o": V1, "p": json_p}, [("p", "total")])
    assert [f["name"] for f in selected["fields"]][3:] == ["p_total"]


@pytest.mark.parametrize(
    ("schemas", "match"),
    [
        ({"o": V1, "p": None}, "stream 'p' has no schema"),
        ({"o": V1, "p": {"properties": {"x": {"type": "object"}}}}, "no Avro counterpart"),
        ({"o": V1, "p": {"properties": {"a-b": {"type": "integer"}}}}, "not a valid Avro field name"),
    ],
)
def test_result_schema_refuses_what_it_cannot_type(schemas: dict[str, Any], match: str) -> None:
    with pytest.raises(SchemaDerivationError, match=match):
        result_schema("q", ["o", "p"], schemas)


def _query(output: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "q",
        "inputs": [
            {"stream": "o", "window": {"range": 5}, "format": "avro"},
            {"stream": "p", "window": {"rows": 2}},
        ],
        "where": [["o.id", "=", "p.id"]],
        "output": output,
    }


def test_output_section_parses_and_dumps_round_trip() -> None:
    schema = result_schema("q", ["o", "p"], {"o": V1, "p": V1})
    for output in (
        {"topic": "out"},
        {"topic": "out", "format": "flat"},
        {"topic": "out", "format": "avro", "schema": schema},
    ):
        query = parse_query(_query(output))
        assert parse_query(dump_query(query)) == query
        assert dump_query(query)["output"] == output
    assert parse_query(_query({"topic": "out"})).output_format == "envelope"
    assert parse_query(_query({"topic": "out"})).inputs[0].format == "avro"


@pytest.mark.parametrize(
    ("output", "field"),
    [
        ({"topic": "out", "format": "xml"}, "output.format"),
        ({"topic": "out", "format": "avro"}, "output.schema"),
        ({"topic": "out", "format": "flat", "schema": V1}, "output.schema"),
        ({"topic": "out", "extra": 1}, "output"),
    ],
)
def test_output_section_errors(output: dict[str, Any], field: str) -> None:
    with pytest.raises(QueryError) as info:
        parse_query(_query(output))
    assert info.value.field == field


def test_flatten_prefixes_each_field_with_its_stream() -> None:
    value = {
        "query": "q",
        "ts": 7,
        "tuples": {"o": {"id": 1}, "p": {"id": 1, "total": 2.5}},
        "id": "a:0:1|b:0:2",
    }
    assert flatten(value) == {
        "query": "q",
        "ts": 7,
        "id": "a:0:1|b:0:2",
        "o_id": 1,
        "p_id": 1,
        "p_total": 2.5,
    }
