"""Fixtures of the API tests: a real control plane on the embedded Redis and broker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from .server import ApiServer, api_settings, running_api

StartApi = Callable[..., AbstractContextManager[ApiServer]]


@pytest.fixture
def start_api(redis_server: str, kafka_broker: str) -> StartApi:
    """Return a factory: `with start_api(api_read_token_required=True) as api: ...`."""

    def start(**overrides: Any) -> AbstractContextManager[ApiServer]:
        return running_api(api_settings(redis_server, kafka_broker, **overrides))

    return start


@pytest.fixture
def api(start_api: StartApi) -> Iterator[ApiServer]:
    """A running API with a write token and open reads, on a fresh registry prefix."""
    with start_api() as server:
        yield server


@pytest.fixture
def streams(api: ApiServer) -> ApiServer:
    """The API with streams `a`, `b`, `c` registered (`b` with a JSON schema)."""
    for body in (
        {"name": "a", "topic": "net.a", "timestamp": "ts"},
        {
            "name": "b",
            "topic": "net.b",
            "timestamp": "ts",
            "schema": {"type": "object", "properties": {"ts": {"type": "number"}, "src": {}, "bytes": {}}},
        },
        {"name": "c", "topic": "net.c", "timestamp": "ts"},
    ):
        response = api.client.post("/v1/streams", json=body)
        assert response.status_code == 201, response.text
    return api
