"""Control Tables: statistics as the joiner publishes them, and PATCHed controls stored with a new version."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin.engine import JoinPlan
from streamjoin.query.dump import dump_query
from streamjoin.registry import OperatorStats

from .publish import QUERY, WINDOWLESS_QUERY, publish_stats
from .server import ApiServer


@pytest.fixture
def query(streams: ApiServer) -> ApiServer:
    assert streams.client.post("/v1/queries", json=QUERY).status_code == 201
    return streams


def test_query_window_operator_topic_tables(query: ApiServer) -> None:
    api = query
    publish_stats(api)
    table = api.anon.get("/v1/control/queries/q").json()
    attributes: dict[str, Any] = table["attributes"]
    assert table["entity"] == "query" and set(table["writable"]) == {
        "evaluation",
        "expiration",
        "order",
        "paused",
    }  # memory_budget_bytes was removed (docs/api.md)
    assert attributes["status"] == "running" and attributes["partitions"] == 2
    assert attributes["records_in"] == 2 * (11 + 13) and attributes["results"] == 14
    assert attributes["records_out"] == 12 and attributes["malformed"] == 4 and attributes["late"] == 2
    assert attributes["memory_bytes"] == 1600 and attributes["watermark"] == 1000
    assert attributes["watermark_lag_ms"] == 500 and attributes["consumer_lag"] == 12
    assert attributes["estimated_cost"] == 42.0 and attributes["observed_cost"] == 21.0
    assert attributes["latency_count"] == 24

    window = api.anon.get("/v1/control/windows/q.a").json()["attributes"]
    assert window["window"] == {"range": 100} and window["records"] == 6 and window["expirations"] == 16
    # the shared window table of the stream's topic, over both partitions
    assert window["table_records"] == 12 and window["table_shared"] == 4
    assert window["malformed"] == 4 and window["consumer_lag"] == 10 and window["topic"] == "net.a"
    operator = api.anon.get("/v1/control/operators/q").json()["attributes"]
    assert (
        operator["global_order"] == ["a", "b"] and operator["comparisons"] == 18 and operator["probes"] == 8
    )
    topics = {t["name"]: t["attributes"] for t in api.anon.get("/v1/control/topics").json()}
    assert topics["net.a"]["records_in"] == {"q": 22} and topics["q.out"]["records_out"] == {"q": 12}
    assert topics["q.out"]["roles"] == ["output"] and topics["q.dead"]["roles"] == ["dead-letter"]
    everything = api.anon.get("/v1/control").json()
    assert {t["entity"] for t in everything} == {"query", "window", "operator", "topic"}
    assert [t["name"] for t in api.anon.get("/v1/control/windows").json()] == ["q.a", "q.b"]


def test_patch_stores_controls_and_bumps_the_version(query: ApiServer) -> None:
    api = query
    version = api.call("version")
    body = {
        "evaluation": {"mode": "lazy", "every": 25},
        "expiration": {"mode": "lazy", "every": 100},
        "order": ["b", "a"],
    }
    response = api.client.patch("/v1/control/queries/q", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["attributes"]["evaluation"] == {"mode": "lazy", "every": 25}
    assert api.call("version") == version + 1
    record = api.call("get_query", "q")
    assert record.controls.order == ("b", "a")
    effective = dump_query(record.effective())
    assert effective["evaluation"] == {"mode": "lazy", "every": 25} and effective["order"] == ["b", "a"]
    assert record.definition["evaluation"] == {"mode": "eager"}  # the definition itself is unchanged

    again = api.client.patch("/v1/control/queries/q", json={"evaluation": {"mode": "eager"}})
    assert again.status_code == 200
    record = api.call("get_query", "q")
    assert record.controls.as_json()["evaluation"] == {"mode": "eager"}
    assert record.controls.order == ("b", "a")  # untouched attributes stay
    assert api.call("version") == version + 2
    assert api.client.patch("/v1/control/queries/q", json={}).status_code == 200
    assert api.call("version") == version + 2  # nothing to change, nothing written


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"order": ["a", "zz"]}, "order"),
        ({"order": ["a"]}, "order"),
        ({"order": "fast"}, "order"),
        ({"evaluation": {"mode": "sometimes"}}, "evaluation.mode"),
        ({"evaluation": {"mode": "lazy"}}, "evaluation.every"),
        ({"evaluation": {"mode": "lazy", "every": -1}}, "evaluation.every"),
        ({"expiration": {"mode": "eager", "every": 5}}, "expiration"),
        ({"paused": "yes"}, "paused"),
        ({"paused": None}, "paused"),
        ({"order": None}, "order"),
        ({"memory_budget_bytes": 0}, "memory_budget_bytes"),
        ({"memory_budget_bytes": 1.5}, "memory_budget_bytes"),
        ({"memory_budget_bytes": 1_000_000}, "memory_budget_bytes"),
        ({"memory_budget_bytes": None}, "memory_budget_bytes"),
        ({"algorithm": "nlj"}, "algorithm"),
    ],
)
def test_bad_control_is_422_and_changes_nothing(query: ApiServer, body: dict[str, Any], field: str) -> None:
    api = query
    before = api.dump()
    response = api.client.patch("/v1/control/queries/q", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field, response.json()
    assert api.dump() == before


def test_removed_memory_budget_says_so(query: ApiServer) -> None:
    api = query
    before = api.dump()
    response = api.client.patch(
        "/v1/control/queries/q", json={"paused": True, "memory_budget_bytes": 1 << 20}
    )
    assert response.status_code == 422 and response.json()["field"] == "memory_budget_bytes"
    assert "memory_budget_bytes was removed" in response.json()["detail"], response.json()
    assert api.dump() == before  # the valid attribute beside it is not written either
    schema = api.anon.get("/openapi.json").json()["components"]["schemas"]["ControlUpdate"]
    assert "memory_budget_bytes" not in schema["properties"]


def test_unknown_entity_kind_and_read_only_kinds(query: ApiServer) -> None:
    api = query
    assert api.anon.get("/v1/control/bogus").status_code == 422
    assert api.client.patch("/v1/control/windows/q.a", json={"memory_budget_bytes": 5}).status_code == 405
    assert api.anon.get("/v1/control/windows/q.zz").status_code == 404


def test_plan_and_replan(query: ApiServer) -> None:
    api = query
    plan = api.anon.get("/v1/queries/q/plan").json()
    assert plan["planned"] is False and plan["requested_order"] == "auto" and plan["plan_changes"] == 0
    publish_stats(api)
    api.call("write_plan", "q", JoinPlan.from_global(["b", "a"], 40.0))
    plan = api.anon.get("/v1/queries/q/plan").json()
    assert plan["planned"] and plan["global_order"] == ["b", "a"] and plan["local_orders"]["a"] == ["a", "b"]
    assert plan["estimated_cost"] == 40.0 and plan["observed_cost"] == 21.0 and plan["plan_changes"] == 1
    version = api.call("version")
    accepted = api.client.post("/v1/queries/q/replan")
    assert accepted.status_code == 202
    request_id = accepted.json()["request_id"]
    assert accepted.json()["registry_version"] == version + 1
    assert api.call("pending_replan", "q") == request_id
    assert api.anon.get("/v1/queries/q/plan").json()["replan_pending"] == request_id


def test_plan_costs_in_one_unit(query: ApiServer) -> None:
    """Estimated (per time unit) and observed (per record) cost, both also per input record."""
    api = query
    for partition, (ratio, records) in enumerate(((2.0, 10), (4.0, 30))):
        operator = OperatorStats(observed_cost=ratio, records_in=records)
        api.call("write_stats", "q", partition, operator, {})
    statistics = {"a": {"name": "a", "rate": 3.0}, "b": {"name": "b", "rate": 1.0}}
    api.call("write_plan", "q", JoinPlan.from_global(["b", "a"], 40.0), statistics=statistics)
    plan = api.anon.get("/v1/queries/q/plan").json()
    assert plan["estimated_cost"] == 40.0 and plan["observed_cost"] == 6.0
    assert plan["estimated_cost_per_record"] == 10.0  # 40 comparisons per time unit / 4 records
    assert plan["observed_cost_per_record"] == 3.5  # (2 * 10 + 4 * 30) / 40
    schema = api.anon.get("/openapi.json").json()["components"]["schemas"]["PlanPublic"]["properties"]
    assert "per timestamp unit" in schema["estimated_cost"]["description"]
    assert "per input record" in schema["observed_cost"]["description"]


def test_a_windowless_input_beside_a_windowed_query(query: ApiServer) -> None:
    """A W-join input has no window of its own: its table says so, and every table still answers."""
    api = query
    assert api.client.post("/v1/queries", json=WINDOWLESS_QUERY).status_code == 201
    everything = api.anon.get("/v1/control")
    assert everything.status_code == 200, everything.text
    windows = {t["name"]: t["attributes"]["window"] for t in everything.json() if t["entity"] == "window"}
    assert windows == {"q.a": {"range": 100}, "q.b": {"rows": 50}, "w.a": None, "w.c": None}
    assert api.anon.get("/v1/control/windows").status_code == 200
    assert api.anon.get("/v1/control/windows/w.c").json()["attributes"]["window"] is None
