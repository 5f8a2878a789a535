"""Fixtures shared by the whole suite: the real embedded broker and Redis (`streamjoin.dev.pytest_plugin`),
a Redis of a test's own to kill and restart, and a throw-away PKI for the TLS tests."""

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.pki import Pki, make_pki
from tests.registry.redis_process import RestartableRedis

pytest_plugins = ["streamjoin.dev.pytest_plugin"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files with the most `slow` tests first, each file's tests still together and in order.

    The test command gives each xdist process a file at a time, in collection order: a slow file
    collected late became the run's tail while the other processes stood idle. Longest first (the
    count of slow tests stands for a file's length), the short files fill in at the end.
    """
    slow = Counter(item.path for item in items if item.get_closest_marker("slow") is not None)
    items.sort(key=lambda item: -slow[item.path])  # a stable sort: a file's tests stay contiguous


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
