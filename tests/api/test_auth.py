"""Bearer-token authorisation: every write needs the token; reads in production (or when configured);
production needs a token; `/metrics` alone, open, on the metrics port."""

from __future__ import annotations

import httpx
import pytest

from streamjoin.api import ConfigurationError, create_app, load_api_settings
from streamjoin.dev.ports import free_port

from .conftest import StartApi
from .server import ApiServer

WRITES = [
    ("POST", "/v1/streams", {"name": "s", "topic": "t"}),
    ("DELETE", "/v1/streams/a", None),
    ("POST", "/v1/queries", {"name": "q", "cql": "SELECT * FROM a [RANGE 1], c [RANGE 1] WHERE a.k = c.k",
                             "output": {"topic": "o"}}),
    ("PUT", "/v1/queries/q", {"cql": "SELECT * FROM a [RANGE 1], c [RANGE 1] WHERE a.k = c.k",
                              "output": {"topic": "o"}}),
    ("DELETE", "/v1/queries/q", None),
    ("POST", "/v1/queries/q/pause", None),
    ("POST", "/v1/queries/q/resume", None),
    ("POST", "/v1/queries/q/replan", None),
    ("PATCH", "/v1/control/queries/q", {"paused": True}),
]  # fmt: skip
READS = ["/v1/streams", "/v1/streams/a", "/v1/queries", "/v1/control", "/v1/control/topics", "/metrics"]


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_every_write_needs_the_token(streams: ApiServer, method: str, path: str, body: object) -> None:
    api = streams
    before = api.dump()
    missing = api.anon.request(method, path, json=body)
    assert missing.status_code == 401, missing.text
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = api.anon.request(method, path, json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403, wrong.text
    basic = api.anon.request(method, path, json=body, headers={"Authorization": "Basic dXNlcjpwdw=="})
    assert basic.status_code == 401
    assert api.dump() == before


def test_reads_are_open_by_default(streams: ApiServer) -> None:
    for path in READS:
        assert streams.anon.get(path).status_code == 200, path


def test_reads_can_require_the_token(start_api: StartApi) -> None:
    with start_api(api_read_token_required=True) as api:
        for path in READS:
            assert api.anon.get(path).status_code == 401, path
            assert api.client.get(path).status_code in (200, 404), path  # past the token check
        assert api.anon.get("/healthz").status_code == 200
        assert api.anon.get("/readyz").status_code == 200


def test_production_reads_need_the_token(start_api: StartApi) -> None:
    with start_api(production=True, kafka_allow_plaintext=True) as api:
        for path in [*READS, "/ui/queries/q/plan.svg"]:
            assert api.anon.get(path).status_code == 401, path
            assert api.anon.get(path, headers={"Authorization": "Bearer nope"}).status_code == 403, path
            assert api.client.get(path).status_code in (200, 404), path  # past the token check
        assert api.anon.get("/healthz").status_code == 200
        assert api.anon.get("/readyz").status_code == 200
        assert api.anon.get("/ui").status_code == 200  # the page carries no data


def test_the_metrics_port_serves_metrics_alone_without_a_token(start_api: StartApi) -> None:
    port = free_port()
    with start_api(production=True, kafka_allow_plaintext=True, metrics_port=port) as api:
        assert api.client.post("/v1/streams", json={"name": "s", "topic": "t"}).status_code == 201
        with httpx.Client(base_url=f"http://{api.settings.api_host}:{port}", timeout=30) as scraper:
            metrics = scraper.get("/metrics")
            assert metrics.status_code == 200, metrics.text
            assert "streamjoin_streams 1.0" in metrics.text
            assert metrics.text == api.client.get("/metrics").text  # what the API port shows with the token
            assert api.anon.get("/metrics").status_code == 401  # the API port still needs it
            before = api.dump()
            for path in [p for p in READS if p != "/metrics"] + ["/readyz", "/ui", "/docs", "/openapi.json"]:
                assert scraper.get(path).status_code == 404, path
            for method, path, body in WRITES:
                assert scraper.request(method, path, json=body).status_code in (404, 405), (method, path)
            assert api.dump() == before


def test_the_metrics_port_cannot_be_the_api_port() -> None:
    with pytest.raises(ValueError, match="STREAMJOIN_METRICS_PORT must differ"):
        load_api_settings(api_port=9000, metrics_port=9000)


def test_without_a_token_writes_are_open_in_development(start_api: StartApi) -> None:
    with start_api(api_token=None) as api:
        assert api.anon.post("/v1/streams", json={"name": "s", "topic": "t"}).status_code == 201


def test_production_refuses_to_start_without_a_token_or_a_registry_key() -> None:
    plaintext = {
        "kafka_allow_plaintext": True
    }  # production's other refusal (tests/test_settings_production.py)
    with pytest.raises(ConfigurationError, match="STREAMJOIN_API_TOKEN"):
        create_app(load_api_settings(production=True, **plaintext))
    with pytest.raises(ConfigurationError, match="STREAMJOIN_API_TOKEN"):
        create_app(load_api_settings(api_read_token_required=True))
    with pytest.raises(ConfigurationError, match="STREAMJOIN_REGISTRY_KEY"):
        create_app(load_api_settings(production=True, api_token="secret", **plaintext))
    create_app(
        load_api_settings(production=True, api_token="secret", registry_key="k" * 32, **plaintext)
    )  # fine


def test_a_short_registry_key_is_refused() -> None:
    with pytest.raises(ValueError, match="STREAMJOIN_REGISTRY_KEY must be at least 32 characters"):
        load_api_settings(registry_key="k" * 31)


def test_binds_loopback_by_default() -> None:
    assert load_api_settings().api_host == "127.0.0.1"
