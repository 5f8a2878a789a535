"""Stream keys and the partitioning plan through the API, on the real Redis.

A stream's `key` is stored, shown, and carried into the inputs of JSON, CQL and SQL queries over it;
a query may not contradict it; a redefinition that changes an input's key is refused (409
`inputs_changed`); the partitioning a joiner publishes with its plan shows in `/plan`, the query's
status and the Control Tables.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin.engine import JoinPlan
from streamjoin.query import parse_query
from streamjoin.query.partitioning import plan_partitioning
from streamjoin.registry import QueryRecord

from .server import ApiServer

_SQL = "SELECT * FROM o [RANGE 100] AS x JOIN p [RANGE 100] AS y ON x.user = y.user"


@pytest.fixture
def keyed(api: ApiServer) -> ApiServer:
    """The API with stream `o` keyed by `user` (with a schema) and `p` not keyed."""
    for body in (
        {
            "name": "o",
            "topic": "shop.o",
            "timestamp": "ts",
            "key": "user",
            "schema": {"type": "object", "properties": {"ts": {"type": "number"}, "user": {}}},
        },
        {"name": "p", "topic": "shop.p", "timestamp": "ts"},
    ):
        response = api.client.post("/v1/streams", json=body)
        assert response.status_code == 201, response.text
    return api


def _json_query(**overrides: Any) -> dict[str, Any]:
    query: dict[str, Any] = {
        "name": "q",
        "inputs": [{"stream": "o", "window": {"range": 100}}, {"stream": "p", "window": {"range": 100}}],
        "where": [["o.user", "=", "p.user"]],
        "output": {"topic": "q.out"},
    }
    return query | overrides


def test_a_stream_key_is_stored_and_shown(keyed: ApiServer) -> None:
    api = keyed
    assert api.anon.get("/v1/streams/o").json()["key"] == "user"
    assert api.anon.get("/v1/streams/p").json()["key"] is None
    assert api.call("get_stream", "o").key == "user"
    assert api.call("get_stream", "p").key is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "s", "topic": "t", "key": 5}, "key"),
        ({"name": "s", "topic": "t", "key": ""}, "key"),
        ({"name": "s", "topic": "t", "key": "s.user"}, "key"),
        ({"name": "s", "topic": "t", "key": "id", "schema": {"properties": {"user": {}}}}, "key"),
    ],
)
def test_a_bad_key_is_refused_and_changes_nothing(keyed: ApiServer, body: dict[str, Any], field: str) -> None:
    api = keyed
    before = api.dump()
    response = api.client.post("/v1/streams", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert api.dump() == before


@pytest.mark.parametrize(
    "body",
    [
        _json_query(),
        {
            "name": "q",
            "cql": "SELECT * FROM o [RANGE 100], p [RANGE 100] WHERE o.user = p.user",
            "output": {"topic": "q.out"},
        },
        {"name": "q", "sql": _SQL, "output": {"topic": "q.out"}},
    ],
    ids=["json", "cql", "sql"],
)
def test_queries_over_registered_streams_carry_their_keys(keyed: ApiServer, body: dict[str, Any]) -> None:
    api = keyed
    response = api.client.post("/v1/queries", json=body)
    assert response.status_code == 201, response.text
    inputs = response.json()["definition"]["inputs"]
    assert [i.get("key") for i in inputs] == ["user", None]
    stored = api.call("get_query", "q")
    assert [i.key for i in stored.query.inputs] == ["user", None]


def test_a_query_may_not_contradict_a_streams_key(keyed: ApiServer) -> None:
    api = keyed
    before = api.dump()
    for i, key in ((0, "id"), (1, "user")):
        body = _json_query()
        body["inputs"][i]["key"] = key
        response = api.client.post("/v1/queries", json=body)
        assert response.status_code == 422, response.text
        assert response.json()["field"] == f"inputs[{i}].key"
    body = _json_query()
    body["inputs"][0]["key"] = "user"  # the stream's own key may be repeated
    assert api.client.post("/v1/queries:validate", json=body).status_code == 200
    assert api.dump() == before


def test_a_redefinition_changing_an_inputs_key_is_inputs_changed(keyed: ApiServer) -> None:
    # Streams cannot be redefined, so a stored query whose input `p` is keyed otherwise than its
    # stream is written to the store directly (as a registry restored from older streams would hold).
    api = keyed
    spec = _json_query()
    spec["inputs"] = [
        {"stream": "o", "topic": "shop.o", "timestamp": "ts", "key": "user"},
        {"stream": "p", "topic": "shop.p", "timestamp": "ts", "key": "user"},
    ]
    for i in spec["inputs"]:
        i["window"] = {"range": 100}
    streams = [api.call("get_stream", "o"), api.call("get_stream", "p")]
    api.call("create_query", QueryRecord.of(parse_query(spec), at=0.0), streams=streams)
    before = api.dump()
    response = api.client.put("/v1/queries/q", json=_json_query(lateness=5))
    assert response.status_code == 409, response.text
    assert response.json()["code"] == "inputs_changed" and response.json()["field"] == "inputs"
    assert "p: 'user' -> None" in response.json()["detail"]
    assert api.dump() == before


def test_partitioning_shows_in_plan_status_and_control_tables(keyed: ApiServer) -> None:
    api = keyed
    assert api.client.post("/v1/queries", json=_json_query()).status_code == 201
    assert api.anon.get("/v1/queries/q/plan").json()["partitioning"] is None
    assert api.anon.get("/v1/queries/q").json()["partitioning"] is None
    query = api.call("get_query", "q").query
    partitioning = plan_partitioning(query, {"shop.o": 4, "shop.p": 2})
    api.call("write_partitioning", "q", partitioning)

    plan = api.anon.get("/v1/queries/q/plan").json()
    assert plan["planned"] is False and plan["global_order"] is None  # no join orders published yet
    assert plan["partitioning"] == partitioning.to_json()
    assert plan["partitioning"]["partitions"] == 4
    assert plan["partitioning"]["repartitioned"] == [
        {
            "stream": "o",
            "reason": "re-keyed with the others: p is not keyed by user",
            "internal_topic": "streamjoin.repartition.q.o",
        },
        {
            "stream": "p",
            "reason": "not keyed (no key declared)",
            "internal_topic": "streamjoin.repartition.q.p",
        },
    ]
    api.call("write_plan", "q", JoinPlan.from_global(["p", "o"], 3.0))  # join orders keep the partitioning
    plan = api.anon.get("/v1/queries/q/plan").json()
    assert plan["planned"] and plan["global_order"] == ["p", "o"]
    assert plan["partitioning"] == partitioning.to_json()
    assert api.call("read_plan", "q").partitioning == partitioning

    status = api.anon.get("/v1/queries/q").json()
    assert status["partitioning"] == partitioning.to_json()
    assert [q["partitioning"] for q in api.anon.get("/v1/queries").json()] == [partitioning.to_json()]
    table = api.anon.get("/v1/control/queries/q").json()["attributes"]
    assert (table["operator_partitions"], table["single_partition"], table["repartitioned"]) == (
        4,
        False,
        ["o", "p"],
    )
    window = api.anon.get("/v1/control/windows/q.p").json()["attributes"]
    assert window["key"] is None and window["rekeyed"] is True
    assert window["internal_topic"] == "streamjoin.repartition.q.p"
    assert window["partitioning_reason"] == "not keyed (no key declared)"
    window = api.anon.get("/v1/control/windows/q.o").json()["attributes"]
    assert (window["key"], window["rekeyed"], window["partitioning_reason"]) == (
        "user",
        True,
        "re-keyed with the others: p is not keyed by user",
    )

    assert api.client.delete("/v1/queries/q").status_code == 204  # the plan hash goes with the query
    assert api.call("read_plan", "q") is None
