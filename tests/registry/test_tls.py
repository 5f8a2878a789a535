"""Redis over TLS for real: Debian's redis-server serving `rediss://` with a private CA.

The stores built from the settings (`STREAMJOIN_REDIS_URL=rediss://...` with
`STREAMJOIN_REDIS_TLS_CA_FILE`) talk to it; without the CA, the certificate is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from tests.pki import Pki

from streamjoin.dev.redis_server import EmbeddedRedis, RedisTls
from streamjoin.registry import RegistryStore, StreamRecord
from streamjoin.settings import load_settings
from streamjoin.state.redis import RedisStateStore

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture(scope="module")
def tls_redis(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Yield the `rediss://127.0.0.1:PORT/0` URL of a TLS-only Redis (no plaintext port)."""
    server = EmbeddedRedis(tls=RedisTls(pki.server_cert, pki.server_key, pki.ca_cert))
    server.start(tmp_path_factory.mktemp("redis-tls"))
    try:
        assert server.url is not None and server.url.startswith("rediss://127.0.0.1:")
        yield server.url
    finally:
        server.stop()


async def test_the_registry_talks_tls_with_the_configured_ca(tls_redis: str, pki: Pki) -> None:
    settings = load_settings(redis_url=tls_redis, redis_tls_ca_file=pki.ca_cert)
    async with RegistryStore.from_settings(settings, prefix="tls-test:") as store:
        assert await store.ping()
        await store.create_stream(StreamRecord("a", "net.a", "ts"))
        assert [s.name for s in await store.list_streams()] == ["a"]


async def test_the_state_store_talks_tls_with_the_configured_ca(tls_redis: str, pki: Pki) -> None:
    store = RedisStateStore.from_settings(load_settings(redis_url=tls_redis, redis_tls_ca_file=pki.ca_cert))
    try:
        assert await store.ping()
    finally:
        await store.aclose()


async def test_without_the_ca_the_certificate_is_refused(tls_redis: str) -> None:
    async with RegistryStore.from_settings(load_settings(redis_url=tls_redis), timeout_ms=2_000) as store:
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED") as caught:
            await store.ping()
    assert "self-signed certificate in certificate chain" in str(caught.value)


async def test_a_plaintext_url_does_not_reach_a_tls_server(tls_redis: str) -> None:
    plain = tls_redis.replace("rediss://", "redis://")
    async with RegistryStore.from_settings(load_settings(redis_url=plain), timeout_ms=1_000) as store:
        with pytest.raises((RedisConnectionError, RedisTimeoutError)):  # hung up on, or no answer
            await store.ping()


def test_the_ca_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="redis_tls_ca_file"):
        load_settings(redis_url="rediss://127.0.0.1:6380/0", redis_tls_ca_file=tmp_path / "missing.pem")
