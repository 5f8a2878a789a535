"""The control plane's edges: token before body, body size, JSON depth, absurd values, Redis down."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from streamjoin.backfill.jobs import BackfillJobs, OutPathError
from streamjoin.dev.ports import free_port

from .conftest import StartApi
from .server import ApiServer

QUERY: dict[str, Any] = {
    "name": "pairs",
    "inputs": [
        {"stream": "a", "topic": "net.a", "timestamp": "ts", "window": {"range": 100}},
        {"stream": "b", "topic": "net.b", "timestamp": "ts", "window": {"range": 100}},
    ],
    "where": [["a.k", "=", "b.k"]],
    "output": {"topic": "pairs.out"},
}


def _raw_request(api: ApiServer, head: str, body: bytes = b"") -> tuple[int, float]:
    """Send a raw HTTP/1.1 request; return the status and the seconds the answer took."""
    host, port = api.settings.api_host, api.settings.api_port
    started = time.monotonic()
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(head.encode() + b"\r\n" + body)
        answer = conn.recv(4096)
    return int(answer.split(b" ", 2)[1]), time.monotonic() - started


def test_the_token_is_checked_before_the_body_is_read(api: ApiServer) -> None:
    bad_json = b'{"name": "a", "topic": '
    assert api.anon.post("/v1/streams", content=bad_json).status_code == 401
    assert (
        api.anon.post("/v1/streams", content=bad_json, headers={"Authorization": "Bearer x"}).status_code
        == 403
    )
    assert api.client.post("/v1/streams", content=bad_json).status_code == 422
    # A 300 MB body announced without a token is refused at once, without being sent or read.
    head = (
        "POST /v1/streams HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 300000000\r\n"
    )
    status, took = _raw_request(api, head)
    assert status == 401 and took < 5


def test_bodies_over_the_cap_are_413(start_api: StartApi) -> None:
    with start_api(api_max_body_bytes=4096) as api:
        big = {"name": "a", "topic": "net.a", "description": "x" * 900, "schema": {"d": "y" * 5000}}
        assert api.client.post("/v1/streams", json=big).status_code == 413
        assert api.anon.post("/v1/streams", json=big).status_code == 401  # the token comes first
        head = (
            "POST /v1/streams HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {api.settings.api_token.get_secret_value()}\r\n"  # type: ignore[union-attr]
            "Content-Length: 300000000\r\n"
        )
        status, took = _raw_request(api, head)
        assert status == 413 and took < 5

        def chunks() -> Any:  # no Content-Length: the running size is what counts
            for _ in range(10):
                yield b" " * 1000

        assert api.client.post("/v1/streams", content=chunks()).status_code == 413
        assert api.client.post("/v1/streams", json={"name": "a", "topic": "net.a"}).status_code == 201
        assert api.dump() != {}


def test_a_schema_nested_too_deep_is_refused_and_nothing_is_stored(api: ApiServer) -> None:
    deep: Any = {"type": "object"}
    for _ in range(300):
        deep = {"properties": {"x": deep}}
    before = api.dump()
    response = api.client.post("/v1/streams", json={"name": "a", "topic": "net.a", "schema": deep})
    assert response.status_code == 422 and "nested" in response.text
    assert api.dump() == before
    assert api.anon.get("/v1/streams").status_code == 200
    shallow = {"type": "object", "properties": {"x": {"type": "object", "properties": {"y": {}}}}}
    assert (
        api.client.post("/v1/streams", json={"name": "a", "topic": "net.a", "schema": shallow}).status_code
        == 201
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"start": -5}, "start"),
        ({"start": 1e300}, "start"),
        ({"lateness": 1e300}, "lateness"),
        ({"evaluation": {"mode": "lazy", "every": 1e18}}, "evaluation.every"),
        (
            {"inputs": [{**QUERY["inputs"][0], "window": {"range": 1e18}}, QUERY["inputs"][1]]},
            "inputs[0].window.range",
        ),
        (
            {"inputs": [{**QUERY["inputs"][0], "window": {"rows": 10**12}}, QUERY["inputs"][1]]},
            "inputs[0].window.rows",
        ),
    ],
)
def test_values_that_can_never_run_are_422(api: ApiServer, change: dict[str, Any], field: str) -> None:
    for name in "ab":
        assert (
            api.client.post(
                "/v1/streams", json={"name": name, "topic": f"net.{name}", "timestamp": "ts"}
            ).status_code
            == 201
        )
    before = api.dump()
    response = api.client.post("/v1/queries", json={**QUERY, **change})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert api.dump() == before


def test_a_5000_digit_window_is_422(api: ApiServer) -> None:
    for name in "ab":
        api.client.post("/v1/streams", json={"name": name, "topic": f"net.{name}", "timestamp": "ts"})
    text = QUERY | {"inputs": "INPUTS"}
    inputs = (
        '[{"stream": "a", "topic": "net.a", "timestamp": "ts", "window": {"range": 1' + "0" * 5000 + "}},"
        '{"stream": "b", "topic": "net.b", "timestamp": "ts", "window": {"range": 1' + "0" * 4000 + "}}]"
    )
    body = json.dumps(text).replace('"INPUTS"', inputs)
    response = api.client.post("/v1/queries", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    small = body.replace("1" + "0" * 5000, "1" + "0" * 100)
    response = api.client.post("/v1/queries", content=small, headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and response.json()["field"] == "inputs[0].window.range", response.text
    cql = {"name": "c", "cql": "SELECT * FROM a [RANGE 1" + "0" * 5000 + "], b [RANGE 10] WHERE a.k = b.k",
           "output": {"topic": "c.out"}}  # fmt: skip
    response = api.client.post("/v1/queries", json=cql)
    assert response.status_code == 422, response.text


def test_backfill_ranges_and_out_paths(api: ApiServer, tmp_path: Path) -> None:
    for name in "ab":
        api.client.post("/v1/streams", json={"name": name, "topic": f"net.{name}", "timestamp": "ts"})
    assert api.client.post("/v1/queries", json=QUERY).status_code == 201
    url = "/v1/queries/pairs/backfills"
    for body in ('{"from": NaN, "to": 10}', '{"from": 0, "to": Infinity}', '{"from": -Infinity, "to": 5}',
                 '{"from": 0, "to": 1e300}'):  # fmt: skip
        response = api.client.post(url, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 422, (body, response.text)
    for out in ("../escape", "/etc/streamjoin", "a/../../escape", "."):
        response = api.client.post(url, json={"from": 0, "to": 10, "out": out})
        assert response.status_code == 422 and response.json()["field"] == "out", (out, response.text)
    assert api.client.get(url).json() == []


def test_out_paths_are_confined(tmp_path: Path) -> None:
    jobs = BackfillJobs(tmp_path / "jobs", out_root=tmp_path / "out")
    assert jobs.out_path("day1") == str((tmp_path / "out" / "day1").resolve())
    assert jobs.out_path(str(tmp_path / "out" / "abs")) == str((tmp_path / "out" / "abs").resolve())
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "link").symlink_to(tmp_path)
    for bad in ("../x", "/tmp/x", "link/x", ""):
        with pytest.raises(OutPathError):
            jobs.out_path(bad)
    assert BackfillJobs(tmp_path / "jobs").out_path("/anywhere") == "/anywhere"  # the CLI's own use


def test_redis_down_is_503(start_api: StartApi) -> None:
    with start_api(redis_url=f"redis://127.0.0.1:{free_port()}/0") as api:
        response = api.anon.get("/v1/streams")
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"] and response.json()["code"] == "unavailable"
        assert api.client.post("/v1/streams", json={"name": "a", "topic": "net.a"}).status_code == 503
