"""The embedded Redis answers, keeps nothing on disk and listens on loopback only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from streamjoin.dev.checks import redis_round_trip
from streamjoin.dev.stack import EmbeddedStack

from .sockets import listening_addresses


@pytest.fixture
def client(redis_server: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_server)
    yield connection
    connection.close()


def test_redis_answers_ping(client: redis.Redis) -> None:
    assert client.ping() is True


def test_a_value_round_trips_through_redis(redis_server: str, client: redis.Redis) -> None:
    client.set("test:dev:key", b"value", px=60_000)
    assert client.get("test:dev:key") == b"value"
    trip = redis_round_trip(redis_server)
    assert client.exists(trip.key) == 0  # the check cleans up after itself


def test_redis_runs_without_persistence(client: redis.Redis) -> None:
    assert client.config_get("save") == {"save": ""}
    assert client.config_get("appendonly") == {"appendonly": "no"}


def test_redis_listens_on_loopback_only(embedded_stack: EmbeddedStack) -> None:
    process = embedded_stack.redis.process
    assert process is not None and process.pid is not None
    assert listening_addresses(process.pid) == [("127.0.0.1", embedded_stack.redis.port)]
