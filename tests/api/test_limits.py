"""Registration limits: inputs per query, queries per deployment, and the state-size budget (4xx
naming the limit; nothing is written)."""

from __future__ import annotations

import itertools
from typing import Any

from .conftest import StartApi
from .server import ApiServer


def _query(name: str, streams: list[str], range_ms: int = 1_000) -> dict[str, Any]:
    return {
        "name": name,
        "inputs": [{"stream": s, "window": {"range": range_ms}} for s in streams],
        "where": [[f"{a}.k", "=", f"{b}.k"] for a, b in itertools.pairwise(streams)],
        "output": {"topic": f"{name}.out"},
    }


def _register_streams(api: ApiServer, names: list[str], **extra: Any) -> None:
    for s in names:
        response = api.client.post(
            "/v1/streams", json={"name": s, "topic": f"t.{s}", "timestamp": "ts", **extra}
        )
        assert response.status_code == 201, response.text


def test_too_many_inputs_is_a_422_naming_the_limit(start_api: StartApi) -> None:
    with start_api(api_max_query_inputs=3) as api:
        names = ["a", "b", "c", "d"]
        _register_streams(api, names)
        response = api.client.post("/v1/queries", json=_query("wide", names))
        assert response.status_code == 422, response.text
        error = response.json()
        assert error["code"] == "limit_exceeded" and error["field"] == "inputs"
        assert "STREAMJOIN_API_MAX_QUERY_INPUTS" in error["detail"] and "4 inputs" in error["detail"]
        assert api.client.get("/v1/queries").json() == []
        assert api.client.post("/v1/queries", json=_query("narrow", names[:3])).status_code == 201


def test_the_queries_cap_is_a_409_and_replacing_stays_allowed(start_api: StartApi) -> None:
    with start_api(api_max_queries=2) as api:
        _register_streams(api, ["a", "b"])
        for name in ("q1", "q2"):
            assert api.client.post("/v1/queries", json=_query(name, ["a", "b"])).status_code == 201
        response = api.client.post("/v1/queries", json=_query("q3", ["a", "b"]))
        assert response.status_code == 409, response.text
        assert response.json()["code"] == "limit_exceeded"
        assert "STREAMJOIN_API_MAX_QUERIES" in response.json()["detail"]
        assert sorted(q["name"] for q in api.client.get("/v1/queries").json()) == ["q1", "q2"]
        body = _query("q2", ["a", "b"], range_ms=2_000)
        del body["name"]
        assert api.client.put("/v1/queries/q2", json=body).status_code == 200
        api.client.delete("/v1/queries/q1")
        assert api.client.post("/v1/queries", json=_query("q3", ["a", "b"])).status_code == 201


def test_a_state_estimate_over_the_budget_is_refused(start_api: StartApi) -> None:
    # 1,000 records/s x 60 s x 1,000 bytes = 60 MB per input: over a 100 MB budget with two inputs
    with start_api(api_state_budget_bytes=100_000_000) as api:
        _register_streams(api, ["a", "b"], expected_rate=1_000, record_bytes=1_000)
        stream = api.client.get("/v1/streams/a").json()
        assert stream["expected_rate"] == 1_000 and stream["record_bytes"] == 1_000
        response = api.client.post("/v1/queries", json=_query("big", ["a", "b"], range_ms=60_000))
        assert response.status_code == 422, response.text
        error = response.json()
        assert error["code"] == "limit_exceeded" and error["field"] == "inputs"
        assert "1.2e+08 bytes" in error["detail"] and "STREAMJOIN_API_STATE_BUDGET_BYTES" in error["detail"]
        assert api.client.get("/v1/queries").json() == []
        # 30 s windows: 60 MB in all, within the budget
        assert (
            api.client.post("/v1/queries", json=_query("ok", ["a", "b"], range_ms=30_000)).status_code == 201
        )


def test_streams_without_expectations_use_the_defaults(start_api: StartApi) -> None:
    # defaults: 100 records/s x 1,024 bytes; 2 inputs x 600 s = 122,880,000 bytes
    with start_api(api_state_budget_bytes=100_000_000) as api:
        _register_streams(api, ["a", "b"])
        response = api.client.post("/v1/queries", json=_query("big", ["a", "b"], range_ms=600_000))
        assert response.status_code == 422 and "1.2288e+08 bytes" in response.json()["detail"]


def test_bad_expectations_are_a_422(api: ApiServer) -> None:
    for extra in ({"expected_rate": -1}, {"expected_rate": 0}, {"record_bytes": 0}, {"record_bytes": 1.5}):
        body = {"name": "s", "topic": "t.s", "timestamp": "ts", **extra}
        assert api.client.post("/v1/streams", json=body).status_code == 422, extra
    assert api.client.get("/v1/streams").json() == []
