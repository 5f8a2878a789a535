"""Production mode refuses a plaintext, unauthenticated Kafka connection unless it is allowed explicitly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from streamjoin.settings import load_settings

SASL = {"kafka_sasl_mechanism": "SCRAM-SHA-512", "kafka_sasl_username": "sj", "kafka_sasl_password": "s3cret"}
REFUSED = "production mode refuses a plaintext, unauthenticated Kafka connection"


def test_production_refuses_plaintext_and_says_what_to_set() -> None:
    with pytest.raises(ValidationError) as caught:
        load_settings(production=True)
    message = str(caught.value)
    assert REFUSED in message
    assert "STREAMJOIN_KAFKA_SECURITY_PROTOCOL=PLAINTEXT" in message
    assert "STREAMJOIN_KAFKA_ALLOW_PLAINTEXT=true" in message


@pytest.mark.parametrize(
    "flags",
    [
        {"kafka_security_protocol": "SASL_SSL", **SASL},
        {"kafka_security_protocol": "SASL_PLAINTEXT", **SASL},
        {"kafka_security_protocol": "SSL"},
        {"kafka_allow_plaintext": True},
    ],
    ids=["SASL_SSL", "SASL_PLAINTEXT", "SSL", "allowed"],
)
def test_production_accepts_a_secured_or_explicitly_allowed_connection(flags: dict[str, Any]) -> None:
    assert load_settings(production=True, **flags).production


def test_development_accepts_plaintext() -> None:
    assert load_settings().kafka_security_protocol == "PLAINTEXT"


def test_the_allowance_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMJOIN_PRODUCTION", "true")
    with pytest.raises(ValidationError, match=REFUSED):
        load_settings()
    monkeypatch.setenv("STREAMJOIN_KAFKA_ALLOW_PLAINTEXT", "true")
    settings = load_settings()
    assert settings.kafka_allow_plaintext and settings.as_env()["STREAMJOIN_KAFKA_ALLOW_PLAINTEXT"] == "true"


@pytest.mark.parametrize(
    "argv",
    [["api"], ["joiner"], ["archiver", "--topic", "t"], ["topics", "create"]],
    ids=["api", "joiner", "archiver", "topics"],
)
def test_every_service_refuses_to_start(argv: list[str], tmp_path: Path) -> None:
    """Each command stops at its settings, before any client: nothing listens on the default port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMJOIN_")}
    env.update(STREAMJOIN_PRODUCTION="true", STREAMJOIN_API_TOKEN="t", STREAMJOIN_ARCHIVE_URL=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", "from streamjoin.cli.main import main; main()", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert REFUSED in done.stderr and "STREAMJOIN_KAFKA_ALLOW_PLAINTEXT=true" in done.stderr, done.stderr
