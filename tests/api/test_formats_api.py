"""`/v1/streams` and `/v1/queries` with formats: Avro streams, and the derived Avro output schema."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from streamjoin.api.services.compile import compile_query
from streamjoin.api.services.output_schema import registry_schemas_of
from streamjoin.query import QueryError
from streamjoin.registry import StreamRecord
from streamjoin.schema_registry import MemorySchemaRegistry, subject_of

from .server import ApiServer

ORDERS = {
    "type": "record",
    "name": "order",
    "fields": [
        {"name": "ts", "type": "long"},
        {"name": "id", "type": "long"},
        {"name": "total", "type": "double"},
    ],
}
JSON_P = {"type": "object", "properties": {"ts": {"type": "number"}, "id": {"type": "integer"}}}


@pytest.fixture
def formats(api: ApiServer) -> ApiServer:
    for body in (
        {"name": "o", "topic": "t.o", "timestamp": "ts", "format": "avro", "schema": ORDERS},
        {"name": "p", "topic": "t.p", "timestamp": "ts", "schema": JSON_P},
        {"name": "n", "topic": "t.n", "timestamp": "ts"},
    ):
        response = api.client.post("/v1/streams", json=body)
        assert response.status_code == 201, response.text
    return api


def _query(output: dict[str, Any], second: str = "p") -> dict[str, Any]:
    return {
        "name": "q1",
        "inputs": [{"stream": "o", "window": {"range": 5}}, {"stream": second, "window": {"range": 5}}],
        "where": [["o.id", "=", f"{second}.id"]],
        "output": output,
    }


def test_avro_stream_and_derived_output_schema(formats: ApiServer) -> None:
    api = formats
    stream = api.anon.get("/v1/streams/o").json()
    assert stream["format"] == "avro" and stream["schema"] == ORDERS
    assert api.anon.get("/v1/streams/p").json()["format"] == "json"
    created = api.client.post("/v1/queries", json=_query({"topic": "q1.out", "format": "avro"}))
    assert created.status_code == 201, created.text
    stored = api.anon.get("/v1/queries/q1").json()["definition"]
    assert stored["inputs"][0]["format"] == "avro" and "format" not in stored["inputs"][1]
    output = stored["output"]
    assert output["format"] == "avro"
    assert [(f["name"], f["type"]) for f in output["schema"]["fields"]] == [
        ("query", "string"),
        ("ts", ["long", "double"]),
        ("id", "string"),
        ("o_ts", ["null", "long"]),
        ("o_id", ["null", "long"]),
        ("o_total", ["null", "double"]),
        ("p_id", ["null", "long"]),  # a JSON Schema's properties are stored sorted
        ("p_ts", ["null", "double"]),
    ]


def test_flat_output_is_stored(formats: ApiServer) -> None:
    created = formats.client.post("/v1/queries", json=_query({"topic": "q1.out", "format": "flat"}))
    assert created.status_code == 201, created.text
    assert formats.anon.get("/v1/queries/q1").json()["definition"]["output"] == {
        "topic": "q1.out",
        "format": "flat",
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "topic": "t.x", "format": "avro", "schema": {"type": "object"}}, "schema"),
        (
            {"name": "x", "topic": "t.x", "format": "avro", "schema": {"type": "record", "name": "x"}},
            "schema",
        ),
        ({"name": "x", "topic": "t.x", "format": "avro", "timestamp": "when", "schema": ORDERS}, "timestamp"),
        ({"name": "x", "topic": "t.x", "format": "xml"}, "format"),
    ],
)
def test_bad_avro_streams_are_refused(api: ApiServer, body: dict[str, Any], field: str) -> None:
    before = api.dump()
    response = api.client.post("/v1/streams", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert api.dump() == before


def test_underivable_output_schema_is_refused(formats: ApiServer) -> None:
    before = formats.dump()
    response = formats.client.post(
        "/v1/queries", json=_query({"topic": "q1.out", "format": "avro"}, second="n")
    )
    assert response.status_code == 422, response.text
    assert (
        response.json()["field"] == "output.schema"
        and "stream 'n' has no schema" in response.json()["detail"]
    )
    assert formats.dump() == before


def test_an_avro_stream_without_schema_takes_the_registrys_latest() -> None:
    streams = {
        "o": StreamRecord("o", "t.o", "ts", None, format="avro"),
        "p": StreamRecord("p", "t.p", "ts", JSON_P),
    }
    registry = MemorySchemaRegistry()
    registry.register(subject_of("t.o"), {**ORDERS, "fields": ORDERS["fields"][:2]})
    registry.register(subject_of("t.o"), ORDERS)  # the latest version is the one used
    raw = _query({"topic": "q1.out", "format": "avro"})
    found = asyncio.run(registry_schemas_of(raw, streams, registry))
    assert found == {"o": ORDERS}
    schema = json.loads(compile_query(raw, None, streams, None, found).query.output_schema or "null")
    assert [f["name"] for f in schema["fields"]][3:] == ["o_ts", "o_id", "o_total", "p_ts", "p_id"]
    with pytest.raises(QueryError, match="stream 'o' has no schema"):
        compile_query(raw, None, streams, None, {})
    assert asyncio.run(registry_schemas_of(_query({"topic": "q1.out"}), streams, registry)) == {}
