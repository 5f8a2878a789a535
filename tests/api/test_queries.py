"""`/v1/queries` against the real Redis: register (JSON and CQL), read, replace, pause, delete, refusals."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from streamjoin.registry import OperatorStats, QueryRecord, WindowStats

from .server import ApiServer

FLOWS: dict[str, Any] = {
    "name": "flows",
    "inputs": [
        {"stream": "a", "window": {"range": 100}},
        {"stream": "b", "window": {"rows": 50}},
        {"stream": "c", "topic": "net.c", "timestamp": "ts", "window": {"range": 200}},
    ],
    "where": [["a.src", "=", "b.src"], ["b.src", "=", "c.src"], ["a.bytes", ">", "c.bytes"]],
    "output": {"topic": "flows.out"},
}
OUT = {"topic": "o"}
CQL = "SELECT * FROM a [RANGE 100], b [ROWS 50], c [RANGE 200] WHERE a.src = b.src AND b.src = c.src"


def _with(path: str, value: Any) -> dict[str, Any]:
    """Return FLOWS with the value at a dotted path (list indexes as numbers) replaced."""
    body = copy.deepcopy(FLOWS)
    *parents, last = path.split(".")
    node: Any = body
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = value
    return body


def test_register_json_and_read_it_back(streams: ApiServer) -> None:
    api = streams
    response = api.client.post("/v1/queries", json=FLOWS)
    assert response.status_code == 201, response.text
    public = response.json()
    assert public["status"] == "pending" and public["source"] == "json" and public["revision"] == 1
    assert public["definition"]["inputs"][0] == {
        "stream": "a",
        "topic": "net.a",
        "timestamp": "ts",
        "window": {"range": 100},
    }
    assert public["cql"].startswith("SELECT * FROM a [RANGE 100], b [ROWS 50]")
    assert public["registry_version"] == api.call("version") == 4  # 3 streams + 1 query
    record = api.call("get_query", "flows")
    assert isinstance(record, QueryRecord)
    assert record.definition == public["definition"]
    assert record.effective().stream_names == ("a", "b", "c")
    assert api.anon.get("/v1/queries/flows").json()["definition"] == public["definition"]
    assert [q["name"] for q in api.anon.get("/v1/queries").json()] == ["flows"]


def test_register_cql_with_options(streams: ApiServer) -> None:
    api = streams
    body = {
        "name": "cq",
        "cql": CQL,
        "output": {"topic": "cq.out"},
        "evaluation": {"mode": "lazy", "every": 50},
        "algorithm": "nlj",
        "paused": True,
    }
    response = api.client.post("/v1/queries", json=body)
    assert response.status_code == 201, response.text
    public = response.json()
    assert public["source"] == "cql" and public["cql"] == CQL and public["status"] == "paused"
    assert public["definition"]["algorithm"] == "nlj"
    assert public["controls"]["evaluation"] == {"mode": "lazy", "every": 50}
    assert public["definition"]["inputs"][1]["topic"] == "net.b"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (_with("inputs.1.stream", "zz"), "inputs[1].stream", "unknown stream 'zz'"),
        (_with("where.2.2", "b.nope"), "where[2][2]", "unknown field 'nope' of stream 'b'"),
        (_with("select", ["b.ts", "b.missing"]), "select[1]", "unknown field 'missing'"),
        (_with("inputs.1.window", {"rows": 5, "partition_by": "h"}), "inputs[1].window.partition_by", "'h'"),
        (_with("inputs.0.window.range", 0), "inputs[0].window.range", "> 0"),
        (_with("inputs.2.window.range", -3), "inputs[2].window.range", "> 0"),
        (_with("inputs.1.window.rows", 0), "inputs[1].window.rows", "> 0"),
        (_with("inputs.0.window", {"range": 5, "rows": 5}), "inputs[0].window", "exactly one"),
        (_with("where", [["a.src", "=", "b.src"]]), "where", "not connected"),
        (_with("where.0.1", "~"), "where[0][1]", "unknown operator"),
        (_with("order", ["a", "b"]), "order", "permutation"),
        (_with("order", "fastest"), "order", ""),
        (_with("evaluation", {"mode": "sometimes"}), "evaluation.mode", ""),
        (_with("evaluation", {"mode": "lazy"}), "evaluation.every", "every > 0"),
        (_with("expiration", {"mode": "lazy", "every": 0}), "expiration.every", "every > 0"),
        (_with("lateness", -1), "lateness", ">= 0"),
        (_with("inputs.0.topic", "other"), "inputs[0].topic", "registered on topic 'net.a'"),
        (_with("inputs.0.timestamp", "time"), "inputs[0].timestamp", "registered with timestamp"),
        (_with("output.topic", "net.a"), "output.topic", "input topic"),
        (_with("name", "bad name"), "name", ""),
        (_with("inputs", [{"stream": "a", "window": {"range": 1}}]), "inputs", "at least 2"),
        ({"name": "x", "cql": "SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.x = b.src OR", "output": OUT},
         "cql", "at position 56"),
        ({"name": "x", "cql": "SELECT * FROM a [RANGE 0], b [ROWS 1]", "output": OUT}, "cql", "> 0"),
        ({"name": "x", "cql": "SELECT * FROM a [RANGE 1], zz [ROWS 1]", "output": OUT},
         "cql", "unknown stream 'zz'"),
        ({"name": "x", "cql": "SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.k = b.k", "output": OUT},
         "where[0][2]", "unknown field 'k' of stream 'b'"),
        ({"name": "x", "cql": "SELECT * FROM a [RANGE 1], c [ROWS 1]", "output": OUT}, "where",
         "not connected"),
        ({**FLOWS, "cql": CQL}, "cql", "either cql or"),
    ],
)  # fmt: skip
def test_each_bad_query_is_a_422_naming_the_field_and_changes_nothing(
    streams: ApiServer, body: dict[str, Any], field: str, words: str
) -> None:
    api = streams
    before = api.dump()
    response = api.client.post("/v1/queries", json=body)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == field, error
    assert words in error["detail"], error
    if field == "cql" and "position" in words:
        assert error["position"] == 56
    assert api.dump() == before


def test_duplicate_is_409_and_changes_nothing(streams: ApiServer) -> None:
    api = streams
    assert api.client.post("/v1/queries", json=FLOWS).status_code == 201
    api.call("write_stats", "flows", 0, OperatorStats(results=3), {"a": WindowStats(records=1)})
    before = api.dump()
    response = api.client.post(
        "/v1/queries", json={**FLOWS, "inputs": FLOWS["inputs"][:2], "where": FLOWS["where"][:1]}
    )
    assert response.status_code == 409 and response.json()["code"] == "query_exists"
    assert api.dump() == before


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/queries/nope"),
        ("PUT", "/v1/queries/nope"),
        ("DELETE", "/v1/queries/nope"),
        ("POST", "/v1/queries/nope/pause"),
        ("POST", "/v1/queries/nope/resume"),
        ("GET", "/v1/queries/nope/plan"),
        ("POST", "/v1/queries/nope/replan"),
        ("GET", "/v1/queries/nope/results"),
        ("GET", "/v1/control/queries/nope"),
        ("GET", "/v1/control/operators/nope"),
        ("GET", "/v1/control/windows/nope.a"),
        ("GET", "/v1/control/topics/nope"),
        ("PATCH", "/v1/control/queries/nope"),
    ],
)
def test_missing_query_is_404_and_changes_nothing(streams: ApiServer, method: str, path: str) -> None:
    api = streams
    before = api.dump()
    body = {**FLOWS, "name": "nope"} if method == "PUT" else ({"paused": True} if method == "PATCH" else None)
    response = api.client.request(method, path, json=body)
    assert response.status_code == 404, response.text
    assert response.json()["code"].endswith("_not_found")
    assert api.dump() == before


def test_replace_pause_resume_delete(streams: ApiServer) -> None:
    api = streams
    assert api.client.post("/v1/queries", json=FLOWS).status_code == 201
    api.call(
        "write_plan",
        "flows",
        __import__("streamjoin.engine", fromlist=["JoinPlan"]).JoinPlan.from_global("abc"),
    )
    paused = api.client.post("/v1/queries/flows/pause")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    version = paused.json()["registry_version"]

    replaced = api.client.put("/v1/queries/flows", json={"cql": CQL, "output": {"topic": "flows.out"}})
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["revision"] == 2 and replaced.json()["source"] == "cql"
    assert (
        replaced.json()["controls"]["paused"] is True and replaced.json()["registry_version"] == version + 1
    )
    assert api.call("read_plan", "flows") is None

    before = api.dump()
    mismatch = api.client.put("/v1/queries/flows", json={**FLOWS, "name": "other"})
    assert mismatch.status_code == 422 and mismatch.json()["field"] == "name"
    bad = api.client.put("/v1/queries/flows", json=_with("inputs.0.window.range", 0))
    assert bad.status_code == 422 and bad.json()["field"] == "inputs[0].window.range"
    assert api.dump() == before

    resumed = api.client.post("/v1/queries/flows/resume")
    assert resumed.json()["status"] == "pending" and not resumed.json()["controls"]["paused"]
    assert api.client.delete("/v1/queries/flows").status_code == 204
    assert api.call("get_query", "flows") is None
    assert api.anon.get("/v1/queries").json() == []
    assert api.client.delete("/v1/streams/a").status_code == 204  # no longer in use


def test_status_follows_what_the_joiner_reports(streams: ApiServer) -> None:
    api = streams
    assert api.client.post("/v1/queries", json=FLOWS).status_code == 201
    api.call("set_status", "flows", 0, worker="w1", state="positioning", partitions=2)
    assert api.anon.get("/v1/queries/flows").json()["status"] == "positioning"
    api.call("set_status", "flows", 0, worker="w1", state="running", partitions=2, version=4)
    api.call("set_status", "flows", 1, worker="w2", state="running", partitions=2, version=4)
    public = api.anon.get("/v1/queries/flows").json()
    assert public["status"] == "running"
    assert [(p["partition"], p["worker"], p["version"]) for p in public["partitions"]] == [
        (0, "w1", 4),
        (1, "w2", 4),
    ]
