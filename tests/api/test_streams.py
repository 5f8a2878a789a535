"""`/v1/streams` against the real Redis: register, read, delete, and every refusal changes nothing."""

from __future__ import annotations

import pytest

from streamjoin.registry import StreamRecord

from .server import ApiServer


def test_register_read_list_delete(api: ApiServer) -> None:
    body = {"name": "orders", "topic": "demo.orders", "timestamp": "ts", "description": "Orders."}
    created = api.client.post("/v1/streams", json=body)
    assert created.status_code == 201, created.text
    assert created.headers["location"] == "/v1/streams/orders"
    assert created.json()["schema"] is None and created.json()["queries"] == []
    stored = api.call("get_stream", "orders")
    assert isinstance(stored, StreamRecord) and stored.topic == "demo.orders" and stored.timestamp == "ts"
    assert api.anon.get("/v1/streams/orders").json()["description"] == "Orders."
    assert [s["name"] for s in api.anon.get("/v1/streams").json()] == ["orders"]
    assert api.client.delete("/v1/streams/orders").status_code == 204
    assert api.call("get_stream", "orders") is None
    assert api.call("version") == 2


def test_kafka_timestamp_when_no_field(api: ApiServer) -> None:
    response = api.client.post("/v1/streams", json={"name": "k", "topic": "t.k"})
    assert response.status_code == 201 and response.json()["timestamp"] is None


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"name": "a", "topic": "net.a"}, 409, "name"),
        ({"name": "bad.name", "topic": "t"}, 422, "name"),
        ({"name": "1x", "topic": "t"}, 422, "name"),
        ({"name": "ok", "topic": "bad topic"}, 422, "topic"),
        ({"name": "ok"}, 422, "topic"),
        ({"name": "ok", "topic": "t", "extra": 1}, 422, "extra"),
        ({"name": "ok", "topic": "t", "timestamp": 5}, 422, "timestamp"),
        ({"name": "ok", "topic": "t", "schema": {"type": "array"}}, 422, "schema.type"),
        ({"name": "ok", "topic": "t", "schema": {"properties": []}}, 422, "schema.properties"),
        (
            {"name": "ok", "topic": "t", "timestamp": "ts", "schema": {"properties": {"x": {}}}},
            422,
            "timestamp",
        ),
        (
            {
                "name": "ok",
                "topic": "t",
                "timestamp": "ts",
                "schema": {"properties": {"ts": {"type": "string"}}},
            },
            422,
            "timestamp",
        ),
    ],
)
def test_refusals_name_the_field_and_change_nothing(
    api: ApiServer, body: dict[str, object], status: int, field: str
) -> None:
    assert api.client.post("/v1/streams", json={"name": "a", "topic": "net.a"}).status_code == 201
    before = api.dump()
    response = api.client.post("/v1/streams", json=body)
    assert response.status_code == status, response.text
    assert response.json()["field"] == field
    assert api.dump() == before


def test_missing_and_in_use(streams: ApiServer) -> None:
    api = streams
    assert api.anon.get("/v1/streams/nope").status_code == 404
    assert api.client.delete("/v1/streams/nope").json()["code"] == "stream_not_found"
    query = {
        "name": "q",
        "cql": "SELECT * FROM a [RANGE 5], c [ROWS 2] WHERE a.k = c.k",
        "output": {"topic": "q.out"},
    }
    assert api.client.post("/v1/queries", json=query).status_code == 201
    before = api.dump()
    refused = api.client.delete("/v1/streams/a")
    assert refused.status_code == 409 and refused.json()["code"] == "stream_in_use"
    assert "'q'" in refused.json()["detail"]
    assert api.anon.get("/v1/streams/a").json()["queries"] == ["q"]
    assert api.dump() == before
