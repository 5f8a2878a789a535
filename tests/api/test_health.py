"""`/healthz` and `/readyz` against the real Redis and broker, and with each of them unreachable."""

from __future__ import annotations

from streamjoin.dev.ports import free_port

from .conftest import StartApi
from .server import ApiServer


def test_live_and_ready(api: ApiServer) -> None:
    assert api.anon.get("/healthz").json()["status"] == "ok"
    ready = api.anon.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert {c["name"]: c["ok"] for c in ready.json()["checks"]} == {
        "redis": True,
        "registry": True,
        "kafka": True,
    }


def test_not_ready_when_the_broker_is_unreachable(start_api: StartApi) -> None:
    with start_api(kafka_bootstrap=f"127.0.0.1:{free_port()}", api_ready_timeout_ms=1_500) as api:
        ready = api.anon.get("/readyz")
        assert ready.status_code == 503
        checks = {c["name"]: c for c in ready.json()["checks"]}
        assert checks["redis"]["ok"] and not checks["kafka"]["ok"]
        assert api.anon.get("/healthz").status_code == 200


def test_not_ready_when_redis_is_unreachable(start_api: StartApi) -> None:
    with start_api(redis_url=f"redis://127.0.0.1:{free_port()}/0", api_ready_timeout_ms=1_500) as api:
        ready = api.anon.get("/readyz")
        assert ready.status_code == 503
        checks = {c["name"]: c for c in ready.json()["checks"]}
        assert not checks["redis"]["ok"] and checks["kafka"]["ok"]


def test_openapi_document(api: ApiServer) -> None:
    document = api.anon.get("/openapi.json").json()
    paths = set(document["paths"])
    assert {
        "/v1/streams",
        "/v1/streams/{name}",
        "/v1/queries",
        "/v1/queries/{name}",
        "/v1/queries/{name}/pause",
        "/v1/queries/{name}/resume",
        "/v1/queries/{name}/plan",
        "/v1/queries/{name}/replan",
        "/v1/queries/{name}/results",
        "/v1/control",
        "/v1/control/{kind}",
        "/v1/control/{kind}/{name}",
        "/v1/control/queries/{name}",
        "/metrics",
        "/healthz",
        "/readyz",
    } <= paths
    assert {"QueryCreate", "QueryUpdate", "QueryPublic", "StreamCreate", "ControlTable", "PlanPublic"} <= set(
        document["components"]["schemas"]
    )
    assert "HTTPBearer" in document["components"]["securitySchemes"]
