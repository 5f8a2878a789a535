"""`streamjoin archiver`'s options reach the service: the metrics address and the Kafka security settings."""

from __future__ import annotations

import os
import socket
import urllib.request
from typing import Any, ClassVar

import pytest
from tests.pki import Pki
from typer.testing import CliRunner

import streamjoin.archiver.service as service
from streamjoin.archiver.metrics import ArchiverMetrics
from streamjoin.cli.main import app


class _Recorder:
    """Stands in for `Archiver`: keeps the config and returns at once."""

    configs: ClassVar[list[service.ArchiverConfig]] = []

    def __init__(self, config: service.ArchiverConfig) -> None:
        self.configs.append(config)

    def stop(self) -> None:
        """Nothing runs."""

    async def run(self) -> None:
        """Nothing to do."""


def _archiver_config(monkeypatch: pytest.MonkeyPatch, *args: str, **env: str) -> service.ArchiverConfig:
    monkeypatch.setattr(service, "Archiver", _Recorder)
    _Recorder.configs = []
    for name in [n for n in os.environ if n.startswith("STREAMJOIN_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["archiver", "--topic", "in.a", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (config,) = _Recorder.configs
    return config


def test_metrics_listen_on_loopback_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _archiver_config(monkeypatch)
    assert (config.metrics_host, config.metrics_port) == ("127.0.0.1", 9465)
    assert dict(config.kafka_options) == {}  # PLAINTEXT: the consumer is built exactly as before


def test_metrics_host_option(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _archiver_config(monkeypatch, "--metrics-host", "0.0.0.0", "--metrics-port", "0")
    assert (config.metrics_host, config.metrics_port) == ("0.0.0.0", 0)


def test_kafka_security_settings_reach_the_consumer(monkeypatch: pytest.MonkeyPatch, pki: Pki) -> None:
    config = _archiver_config(
        monkeypatch,
        STREAMJOIN_KAFKA_SECURITY_PROTOCOL="SASL_SSL",
        STREAMJOIN_KAFKA_SASL_MECHANISM="SCRAM-SHA-256",
        STREAMJOIN_KAFKA_SASL_USERNAME="archiver",
        STREAMJOIN_KAFKA_SASL_PASSWORD="pw",
        STREAMJOIN_KAFKA_TLS_CA_FILE=str(pki.ca_cert),
    )
    options: dict[str, Any] = dict(config.kafka_options)
    assert options.pop("ssl_context") is not None
    assert options == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "archiver",
        "sasl_plain_password": "pw",
    }


def _scrape(host: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=2) as response:
            return b"streamjoin_archiver" in response.read()
    except OSError:
        return False


@pytest.mark.parametrize(("host", "reachable_elsewhere"), [("127.0.0.1", False), ("0.0.0.0", True)])
def test_the_metrics_address_is_the_one_bound(host: str, reachable_elsewhere: bool) -> None:
    """127.0.0.2 is another local address: only a server on every interface (0.0.0.0) answers there."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.2", 0))
        except OSError:
            pytest.skip("no 127.0.0.2 on this machine")
    metrics = ArchiverMetrics()
    port = metrics.serve(0, host)
    try:
        assert _scrape("127.0.0.1", port)
        assert _scrape("127.0.0.2", port) is reachable_elsewhere
    finally:
        metrics.close()
