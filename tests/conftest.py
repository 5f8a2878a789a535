"""Fixtures shared by the whole suite: the real embedded broker and Redis (`streamjoin.dev.pytest_plugin`),
a Redis of a test's own to kill and restart, and a throw-away PKI for the TLS tests."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.pki import Pki, make_pki
from tests.registry.redis_process import RestartableRedis

pytest_plugins = ["streamjoin.dev.pytest_plugin"]


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA with a server certificate for 127.0.0.1 and a client certificate (tests/pki.py)."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session", autouse=True)
def _data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep what the services write to their data directory (back-fill jobs) out of the user's own."""
    previous = os.environ.get("STREAMJOIN_DATA_DIR")
    os.environ["STREAMJOIN_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("STREAMJOIN_DATA_DIR", None)
        else:
            os.environ["STREAMJOIN_DATA_DIR"] = previous


@pytest.fixture
def restartable_redis(tmp_path: Path) -> Iterator[RestartableRedis]:
    """A redis-server of the test's own that it may kill, wipe and start again (`RestartableRedis`)."""
    server = RestartableRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
