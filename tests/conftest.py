"""Fixtures shared by the whole suite: the real embedded broker and Redis (`streamjoin.dev.pytest_plugin`),
and a throw-away PKI for the TLS tests."""

import pytest
from tests.pki import Pki, make_pki

pytest_plugins = ["streamjoin.dev.pytest_plugin"]


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA with a server certificate for 127.0.0.1 and a client certificate (tests/pki.py)."""
    return make_pki(tmp_path_factory.mktemp("pki"))
