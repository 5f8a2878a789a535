"""The window models over REST: strict windows, inputs without a window, `within` pairs, the
invalidation scopes (in a definition and as a runtime control) and the tightened bounds of `/plan`."""

from __future__ import annotations

from typing import Any

import pytest

from .server import ApiServer

_WJOIN: dict[str, Any] = {
    "name": "w",
    "inputs": [{"stream": "a"}, {"stream": "b", "window": {"range": 10, "strict": True}}, {"stream": "c"}],
    "where": [["a.src", "=", "b.src"], ["b.src", "=", "c.src"]],
    "within": [["a", "b", 3], ["b", "c", 4]],
    "expiration": {"mode": "probe_all"},
    "output": {"topic": "w.out"},
}


def test_a_wjoin_query_is_stored_and_its_plan_shows_the_tightened_bounds(streams: ApiServer) -> None:
    api = streams
    created = api.client.post("/v1/queries", json=_WJOIN)
    assert created.status_code == 201, created.text
    record = api.call("get_query", "w")
    assert record.definition["within"] == [["a", "b", 3], ["b", "c", 4]]
    assert record.definition["inputs"][1]["window"] == {"range": 10, "strict": True}
    assert "window" not in record.definition["inputs"][0]
    bounds = api.anon.get("/v1/queries/w/plan").json()["bounds"]
    by_pair = {tuple(b["streams"]): b for b in bounds}
    assert by_pair[("a", "c")] == {"streams": ["a", "c"], "bound": 7, "given": None, "path": ["a", "b", "c"]}
    assert by_pair[("a", "b")]["bound"] == 3 and by_pair[("b", "c")]["bound"] == 4


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"within": [["a", "b", 3]]}, "inputs[2].window"),  # c is bounded by nothing: needed forever
        ({"within": [["a", "b", 0], ["b", "c", 4]]}, "within[0][2]"),
        ({"within": [["a", "a", 3], ["b", "c", 4]]}, "within[0]"),
        ({"expiration": {"mode": "probe", "every": 5}}, "expiration"),
        ({"expiration": {"mode": "sometimes"}}, "expiration.mode"),
    ],
)
def test_bad_window_models_are_422_and_change_nothing(
    streams: ApiServer, change: dict[str, Any], field: str
) -> None:
    api = streams
    before = api.dump()
    response = api.client.post("/v1/queries", json={**_WJOIN, **change})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field, response.json()
    assert api.dump() == before


@pytest.mark.parametrize("mode", ["probe", "probe_insert", "probe_all"])
def test_patch_sets_an_invalidation_scope_at_runtime(streams: ApiServer, mode: str) -> None:
    api = streams
    assert api.client.post("/v1/queries", json=_WJOIN).status_code == 201
    version = api.call("version")
    response = api.client.patch("/v1/control/queries/w", json={"expiration": {"mode": mode}})
    assert response.status_code == 200, response.text
    assert response.json()["attributes"]["expiration"] == {"mode": mode}
    assert api.call("get_query", "w").effective().expiration.mode == mode
    assert api.call("version") == version + 1
    bad = api.client.patch("/v1/control/queries/w", json={"expiration": {"mode": mode, "every": 3}})
    assert bad.status_code == 422 and bad.json()["field"] == "expiration", bad.text
