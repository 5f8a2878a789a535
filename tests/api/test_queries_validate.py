"""`POST /v1/queries:validate` (a dry run of registration) and the console's routes and plan picture."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from streamjoin.api.schemas import PlanPublic
from streamjoin.api.ui import plan_svg

from .server import ApiServer
from .test_queries import CQL, FLOWS, OUT, _with

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "body",
    [
        _with("lateness", -1),
        _with("inputs.0.topic", "other"),
        {"name": "x", "cql": "SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.x = b.src OR", "output": OUT},
        {"name": "x", "cql": "SELECT * FROM a [RANGE 1], zz [ROWS 1]", "output": OUT},
        {"name": "x", "sql": "SELECT * FROM a [RANGE 1] AS o JOIN b [ROWS 1] AS p ON", "output": OUT},
        {"name": "bad name", "cql": CQL, "output": OUT},
    ],
)
def test_an_invalid_query_gets_registrations_422_and_nothing_changes(
    streams: ApiServer, body: dict[str, Any]
) -> None:
    before = streams.dump()
    validated = streams.client.post("/v1/queries:validate", json=body)
    assert validated.status_code == 422, validated.text
    assert streams.dump() == before
    registered = streams.client.post("/v1/queries", json=body)
    assert (registered.status_code, registered.json()) == (422, validated.json())


def test_a_valid_query_is_described_and_not_registered(streams: ApiServer) -> None:
    body = {"name": "flows", "cql": CQL, "output": OUT}
    before = streams.dump()
    validated = streams.client.post("/v1/queries:validate", json=body)
    assert validated.status_code == 200, validated.text
    answer = validated.json()
    assert answer["valid"] is True and answer["name"] == "flows" and answer["streams"] == ["a", "b", "c"]
    assert answer["exists"] is False and answer["cql"] == CQL
    assert streams.dump() == before
    assert streams.client.get("/v1/queries/flows").status_code == 404
    registered = streams.client.post("/v1/queries", json=body).json()
    assert registered["definition"] == answer["definition"]
    again = streams.client.post("/v1/queries:validate", json={**copy.deepcopy(FLOWS), "name": "flows"})
    assert again.status_code == 200 and again.json()["exists"] is True


def test_validating_is_a_write_and_needs_the_token(streams: ApiServer) -> None:
    response = streams.anon.post("/v1/queries:validate", json={"name": "x", "cql": CQL, "output": OUT})
    assert response.status_code == 401


def _plan(name: str) -> PlanPublic:
    return PlanPublic(
        query=name,
        planned=True,
        requested_order="auto",
        global_order=["a", "b"],
        local_orders={"a": ["b"], "b": ["a"]},
        estimated_cost=2.0,
        observed_cost=None,
        reason="<script>alert(1)</script>",
        changed_at=1.0,
        plan_changes=1,
        statistics={},
        replan_pending=None,
    )


def test_the_plan_picture_escapes_names_and_reasons() -> None:
    svg = plan_svg(_plan('q"><script>'), ["a<b", "b&c"])
    assert "<script>" not in svg
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg and 'data-query="q&#34;&gt;&lt;script&gt;"' in svg
    assert svg.count('class="stream-node"') == 2 and 'data-stream="a&lt;b"' in svg and "b&amp;c" in svg


def test_the_console_page_is_open_and_its_data_follow_the_read_rule(start_api: Any) -> None:
    with start_api(api_read_token_required=True) as api:
        page = api.anon.get("/ui")
        assert page.status_code == 200 and "streamjoin console" in page.text
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert api.anon.get("/ui/static/console.js").headers["content-type"].startswith("text/javascript")
        for missing in ("nope.js", "..%2Fmain.py", "render.py"):
            assert api.anon.get(f"/ui/static/{missing}").status_code == 404
        assert api.anon.get("/v1/streams").status_code == 401
        for body in (
            {"name": "a", "topic": "net.a", "timestamp": "ts"},
            {"name": "b", "topic": "net.b", "timestamp": "ts"},
        ):
            assert api.client.post("/v1/streams", json=body).status_code == 201
        query = {"name": "q", "cql": "SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.k = b.k", "output": OUT}
        assert api.client.post("/v1/queries", json=query).status_code == 201
        assert api.anon.get("/ui/queries/q/plan.svg").status_code == 401
        svg = api.client.get("/ui/queries/q/plan.svg")
        assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
        assert svg.text.count('class="stream-node"') == 2 and "not planned yet" in svg.text
        assert api.client.get("/ui/queries/zz/plan.svg").status_code == 404
