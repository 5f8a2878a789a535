"""The `shedding_memory` control: PATCHed at runtime, applied to the effective query, checked."""

from __future__ import annotations

from streamjoin.query.dump import dump_query

from .server import ApiServer

SHED = {
    "name": "s",
    "cql": "SELECT * FROM a [RANGE 100], b [RANGE 100] WHERE a.src = b.src SHED MEMORY 40 POLICY simp",
    "output": {"topic": "s.out"},
}
PLAIN = {
    "name": "q",
    "cql": "SELECT * FROM a [RANGE 100], b [RANGE 100] WHERE a.src = b.src",
    "output": {"topic": "q.out"},
}


def test_patch_shedding_memory_changes_the_effective_budget(streams: ApiServer) -> None:
    api = streams
    created = api.client.post("/v1/queries", json=SHED)
    assert created.status_code == 201, created.text
    table = api.client.get("/v1/control/queries/s").json()
    assert "shedding_memory" in table["writable"] and table["attributes"]["shedding_memory"] == 40
    response = api.client.patch("/v1/control/queries/s", json={"shedding_memory": 10})
    assert response.status_code == 200, response.text
    assert response.json()["attributes"]["shedding_memory"] == 10
    record = api.call("get_query", "s")
    assert dump_query(record.effective())["shedding"]["memory"] == 10
    assert record.definition["shedding"]["memory"] == 40  # the definition itself is unchanged


def test_bad_shedding_memory_is_422_and_changes_nothing(streams: ApiServer) -> None:
    api = streams
    assert api.client.post("/v1/queries", json=SHED).status_code == 201
    assert api.client.post("/v1/queries", json=PLAIN).status_code == 201
    before = api.dump()
    for name, body in (
        ("s", {"shedding_memory": 1}),  # below one record per window
        ("s", {"shedding_memory": "lots"}),
        ("s", {"shedding_memory": None}),
        ("q", {"shedding_memory": 10}),  # no shedding to budget
    ):
        response = api.client.patch(f"/v1/control/queries/{name}", json=body)
        assert response.status_code == 422, (name, body, response.text)
        assert response.json()["field"] == "shedding_memory", response.json()
    assert api.dump() == before
    assert "shedding_memory" not in api.client.get("/v1/control/queries/q").json()["writable"]


def test_the_shedding_field_in_json_is_registered_and_checked(streams: ApiServer) -> None:
    api = streams
    body = {
        "name": "j",
        "inputs": [{"stream": "a", "window": {"range": 100}}, {"stream": "b", "window": {"range": 100}}],
        "where": [["a.src", "=", "b.src"]],
        "output": {"topic": "j.out"},
        "shedding": {"memory": 40, "policy": "dgl", "combine": "sum", "seed": 3},
    }
    before = api.dump()
    for bad, field in (
        ({"memory": 40, "policy": "best"}, "policy"),
        ({"memory": 1, "policy": "simp"}, "memory"),
    ):
        response = api.client.post("/v1/queries", json={**body, "shedding": bad})
        assert response.status_code == 422, response.text
        assert field in response.text
    assert api.dump() == before
    created = api.client.post("/v1/queries", json=body)
    assert created.status_code == 201, created.text
    shedding = created.json()["definition"]["shedding"]
    assert (shedding["memory"], shedding["policy"], shedding["combine"], shedding["seed"]) == (
        40,
        "dgl",
        "sum",
        3,
    )
    assert api.client.get("/v1/control/queries/j").json()["attributes"]["shedding_memory"] == 40
