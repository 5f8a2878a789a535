"""Redis restarted empty under a running control plane: the registry comes back from its log.

Until it has, the API answers 503 (with `Retry-After`), never "no queries"; afterwards every
stream and query is there with its controls, and a deleted query stays deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from tests.registry.redis_process import RestartableRedis

from .server import ApiServer, api_settings, running_api

pytestmark = pytest.mark.timeout(120)


def _query(name: str, left: str, right: str) -> dict[str, Any]:
    return {
        "name": name,
        "inputs": [
            {"stream": left, "window": {"range": 100}},
            {"stream": right, "window": {"rows": 10}},
        ],
        "where": [[f"{left}.k", "=", f"{right}.k"]],
        "output": {"topic": f"{name}.out"},
    }


def _register(api: ApiServer) -> None:
    for name in ("a", "b", "c", "gone"):
        r = api.client.post("/v1/streams", json={"name": name, "topic": f"t.{name}", "timestamp": "ts"})
        assert r.status_code == 201, r.text
    for name, left, right in (("q1", "a", "b"), ("q2", "b", "c"), ("q3", "a", "c"), ("q4", "a", "b")):
        assert api.client.post("/v1/queries", json=_query(name, left, right)).status_code == 201
    assert api.client.post("/v1/queries/q2/pause").status_code == 200
    r = api.client.patch(
        "/v1/control/queries/q3",
        json={"evaluation": {"mode": "lazy", "every": 25}, "order": ["c", "a"]},
    )
    assert r.status_code == 200, r.text
    redefined = _query("q1", "a", "b")  # a PUT may change everything but the inputs (409 otherwise)
    redefined["inputs"][0]["window"] = {"range": 250}
    assert api.client.put("/v1/queries/q1", json=redefined).status_code == 200
    assert api.client.delete("/v1/queries/q4").status_code == 204
    assert api.client.delete("/v1/streams/gone").status_code == 204


def _without_version(queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in q.items() if k != "registry_version"} for q in queries]


def _poll(
    get: Callable[[], httpx.Response], *, readiness: bool = False, timeout_s: float = 30
) -> tuple[httpx.Response, int]:
    """Return the first answer that is not a 503, and how many 503s came before it."""
    unavailable = 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            r = get()
        except httpx.TransportError:
            time.sleep(0.05)
            continue
        if r.status_code != 503:
            return r, unavailable
        if readiness:
            assert not r.json()["ready"], r.text
        else:
            assert r.headers.get("retry-after"), r.headers
            # being restored, or (a pooled connection to the restarted Redis) unreachable
            assert r.json()["code"] in ("registry_unavailable", "unavailable"), r.text
        unavailable += 1
        time.sleep(0.05)
    raise AssertionError("the registry was not restored in time")


def test_redis_restarted_empty_keeps_every_query(
    restartable_redis: RestartableRedis, kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("registry", partitions=1, config={"cleanup.policy": "compact"})
    settings = api_settings(
        restartable_redis.url, kafka_broker, api_registry_topic=topic, api_registry_check_ms=3_000
    )
    with running_api(settings) as api:
        _register(api)
        queries = api.client.get("/v1/queries").json()
        streams = api.client.get("/v1/streams").json()
        control = api.client.get("/v1/control/queries/q3").json()
        assert [q["name"] for q in queries] == ["q1", "q2", "q3"]

        restartable_redis.crash()
        restartable_redis.wipe()
        restartable_redis.start()

        listed, unavailable = _poll(lambda: api.client.get("/v1/queries"))
        assert unavailable >= 1  # the guard checks every 3 s: the first answers came before the restore
        assert listed.status_code == 200, listed.text
        assert _without_version(listed.json()) == _without_version(queries)
        assert listed.json()[0]["registry_version"] > queries[0]["registry_version"]
        assert api.client.get("/v1/streams").json() == streams
        assert api.client.get("/v1/control/queries/q3").json() == control
        assert api.client.get("/v1/queries/q2").json()["status"] == "paused"
        assert api.client.get("/v1/queries/q4").status_code == 404
        assert api.client.get("/v1/streams/gone").status_code == 404
        assert api.anon.get("/readyz").status_code == 200

        # writes work again, and are logged: a second loss keeps them too
        assert api.client.post("/v1/queries", json=_query("q5", "b", "c")).status_code == 201
        restartable_redis.crash()
        restartable_redis.wipe()
        restartable_redis.start()
        ready, _ = _poll(lambda: api.anon.get("/readyz"), readiness=True)
        assert ready.status_code == 200
        names = [q["name"] for q in _poll(lambda: api.client.get("/v1/queries"))[0].json()]
        assert names == ["q1", "q2", "q3", "q5"]


def test_the_api_restores_at_start_up(
    restartable_redis: RestartableRedis, kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("registry", partitions=1, config={"cleanup.policy": "compact"})
    settings = api_settings(restartable_redis.url, kafka_broker, api_registry_topic=topic)
    with running_api(settings) as api:
        _register(api)
        queries = _without_version(api.client.get("/v1/queries").json())
    restartable_redis.crash()
    restartable_redis.wipe()
    restartable_redis.start()
    with running_api(settings) as api:
        assert _without_version(api.client.get("/v1/queries").json()) == queries
