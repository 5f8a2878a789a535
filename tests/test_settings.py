"""The settings contract: the Kafka and Redis security settings, their validation, and `as_env`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from streamjoin.settings import Settings, load_settings


@pytest.fixture
def pem(tmp_path: Path) -> Path:
    """A file that exists (the settings check only that; the clients load it)."""
    path = tmp_path / "file.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\n")
    return path


SASL = {"kafka_sasl_mechanism": "SCRAM-SHA-512", "kafka_sasl_username": "sj", "kafka_sasl_password": "s3cret"}


def test_the_default_is_plaintext_without_credentials() -> None:
    settings = load_settings()
    assert settings.kafka_security_protocol == "PLAINTEXT"
    assert settings.kafka_sasl_mechanism is None and settings.kafka_sasl_password is None
    assert settings.kafka_tls_ca_file is None and settings.redis_tls_ca_file is None


def test_the_chart_variables_are_read(monkeypatch: pytest.MonkeyPatch, pem: Path) -> None:
    """The exact names helm/streamjoin/templates/_helpers.tpl and configmap.yaml set."""
    for name, value in {
        "STREAMJOIN_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "STREAMJOIN_KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
        "STREAMJOIN_KAFKA_SASL_USERNAME": "streamjoin",
        "STREAMJOIN_KAFKA_SASL_PASSWORD": "pw",
        "STREAMJOIN_KAFKA_TLS_CA_FILE": str(pem),
        "STREAMJOIN_KAFKA_TLS_CERT_FILE": str(pem),
        "STREAMJOIN_KAFKA_TLS_KEY_FILE": str(pem),
        "STREAMJOIN_REDIS_URL": "rediss://redis:6380/0",
        "STREAMJOIN_REDIS_TLS_CA_FILE": str(pem),
    }.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.kafka_security_protocol == "SASL_SSL"
    assert settings.kafka_sasl_mechanism == "SCRAM-SHA-256"
    assert settings.kafka_sasl_username == "streamjoin"
    assert settings.kafka_sasl_password is not None
    assert settings.kafka_sasl_password.get_secret_value() == "pw"
    assert settings.kafka_tls_ca_file == settings.kafka_tls_cert_file == settings.kafka_tls_key_file == pem
    assert settings.redis_tls_ca_file == pem
    assert "pw" not in repr(settings)


def test_protocol_and_mechanism_are_case_insensitive() -> None:
    flags = {**SASL, "kafka_sasl_mechanism": "plain"}
    settings = load_settings(kafka_security_protocol="sasl_plaintext", **flags)
    assert (settings.kafka_security_protocol, settings.kafka_sasl_mechanism) == ("SASL_PLAINTEXT", "PLAIN")


def test_as_env_round_trips_with_secrets_and_skips_unset(pem: Path) -> None:
    settings = load_settings(kafka_security_protocol="SASL_SSL", kafka_tls_ca_file=pem, **SASL)
    env = settings.as_env()
    assert env["STREAMJOIN_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert env["STREAMJOIN_KAFKA_SASL_PASSWORD"] == "s3cret"
    assert env["STREAMJOIN_KAFKA_TLS_CA_FILE"] == str(pem)
    assert "STREAMJOIN_KAFKA_TLS_CERT_FILE" not in env and "STREAMJOIN_REDIS_TLS_CA_FILE" not in env
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        assert Settings() == settings


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"kafka_security_protocol": "TLS"},
         r"kafka_security_protocol\n.*'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT'"),
        ({"kafka_sasl_mechanism": "GSSAPI", **{k: v for k, v in SASL.items() if k != "kafka_sasl_mechanism"}},
         r"kafka_sasl_mechanism\n.*'PLAIN', 'SCRAM-SHA-256' or 'SCRAM-SHA-512'"),
        ({"kafka_security_protocol": "SASL_SSL"},
         "STREAMJOIN_KAFKA_SECURITY_PROTOCOL=SASL_SSL needs STREAMJOIN_KAFKA_SASL_MECHANISM, "
         "STREAMJOIN_KAFKA_SASL_USERNAME, STREAMJOIN_KAFKA_SASL_PASSWORD"),
        ({"kafka_security_protocol": "SASL_PLAINTEXT", **SASL, "kafka_sasl_password": ""},
         "SASL_PLAINTEXT needs STREAMJOIN_KAFKA_SASL_PASSWORD \\["),
        ({"kafka_security_protocol": "SASL_PLAINTEXT", **SASL, "kafka_sasl_username": ""},
         "SASL_PLAINTEXT needs STREAMJOIN_KAFKA_SASL_USERNAME \\["),
        ({"kafka_security_protocol": "SSL", **SASL},
         "STREAMJOIN_KAFKA_SASL_MECHANISM, .* given, "
         "but STREAMJOIN_KAFKA_SECURITY_PROTOCOL=SSL does not use SASL"),
        ({"kafka_security_protocol": "SSL", "kafka_tls_cert_file": "PEM"},
         "STREAMJOIN_KAFKA_TLS_CERT_FILE and STREAMJOIN_KAFKA_TLS_KEY_FILE go together .*: "
         "only STREAMJOIN_KAFKA_TLS_CERT_FILE is set"),
        ({"kafka_security_protocol": "SSL", "kafka_tls_key_file": "PEM"},
         "only STREAMJOIN_KAFKA_TLS_KEY_FILE is set"),
        ({"kafka_tls_ca_file": "PEM"},
         "STREAMJOIN_KAFKA_TLS_CA_FILE given, "
         "but STREAMJOIN_KAFKA_SECURITY_PROTOCOL=PLAINTEXT does not use TLS"),
        ({"kafka_security_protocol": "SASL_PLAINTEXT", "kafka_tls_ca_file": "PEM", **SASL},
         "does not use TLS"),
        ({"kafka_security_protocol": "SSL", "kafka_tls_ca_file": "/no/such/ca.pem"},
         r"kafka_tls_ca_file\n.*Path does not point to a file"),
        ({"redis_tls_ca_file": "PEM"},
         "STREAMJOIN_REDIS_TLS_CA_FILE given, but STREAMJOIN_REDIS_URL is not a rediss:// \\(TLS\\) URL"),
    ],
)  # fmt: skip
def test_invalid_security_settings_name_the_setting(flags: dict[str, Any], message: str, pem: Path) -> None:
    flags = {name: pem if value == "PEM" else value for name, value in flags.items()}
    with pytest.raises(ValidationError, match=message) as caught:
        load_settings(**flags)
    assert "s3cret" not in str(caught.value)  # the input is not echoed: it may hold the password


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_every_protocol_has_a_valid_configuration(protocol: str, pem: Path) -> None:
    sasl = SASL if protocol.startswith("SASL") else {}
    tls = {"kafka_tls_ca_file": pem} if protocol.endswith("SSL") else {}
    assert load_settings(kafka_security_protocol=protocol, **sasl, **tls).kafka_security_protocol == protocol


@pytest.mark.parametrize(
    "master",
    ["local", "local[2]", "local[*]", "local[4,2]", "spark://10.0.0.5:7077", "spark://a:7077,b:7077", "yarn",
     "k8s://https://kube.example:6443"],
)  # fmt: skip
def test_spark_master_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, master: str) -> None:
    monkeypatch.setenv("STREAMJOIN_SPARK_MASTER", master)
    settings = load_settings()
    assert settings.spark_master == master
    assert settings.as_env()["STREAMJOIN_SPARK_MASTER"] == master
    assert load_settings(spark_master="local[1]").spark_master == "local[1]"  # the flag wins


def test_spark_master_defaults_to_none() -> None:
    assert load_settings().spark_master is None
    assert "STREAMJOIN_SPARK_MASTER" not in load_settings().as_env()


@pytest.mark.parametrize(
    "master", ["", "spark//host:7077", "sprak://h:7077", "spark://host", "local[two]", "mesos"]
)
def test_a_bad_spark_master_is_refused(master: str) -> None:
    with pytest.raises(ValidationError, match="is not a Spark master URL"):
        load_settings(spark_master=master)


def test_the_data_directory_is_the_users_unless_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Back-fill jobs and their output go under the data directory, never the current directory."""
    from streamjoin.api.config import load_api_settings

    monkeypatch.delenv("STREAMJOIN_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    settings = load_api_settings()
    assert settings.data_dir == tmp_path / "xdg" / "streamjoin"
    assert settings.backfill_jobs_dir == tmp_path / "xdg" / "streamjoin" / "backfill-jobs"
    assert settings.backfill_out_dir == tmp_path / "xdg" / "streamjoin" / "backfill-out"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert load_settings().data_dir == Path.home() / ".local" / "share" / "streamjoin"
    monkeypatch.setenv("STREAMJOIN_DATA_DIR", str(tmp_path / "mine"))
    settings = load_api_settings()
    assert settings.backfill_jobs_dir == tmp_path / "mine" / "backfill-jobs"
    assert settings.as_env()["STREAMJOIN_DATA_DIR"] == str(tmp_path / "mine")  # what a job inherits
    assert load_api_settings(api_backfill_dir=str(tmp_path / "j")).backfill_jobs_dir == tmp_path / "j"


def test_the_archive_is_in_the_data_directory_unless_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An archiver or back-fill started from a checkout neither writes nor reads `./archive`."""
    monkeypatch.delenv("STREAMJOIN_ARCHIVE_URL", raising=False)
    monkeypatch.setenv("STREAMJOIN_DATA_DIR", str(tmp_path / "mine"))
    assert load_settings().archive_url == str(tmp_path / "mine" / "archive")
    assert load_settings(data_dir=str(tmp_path / "given")).archive_url == str(tmp_path / "given" / "archive")
    monkeypatch.setenv("STREAMJOIN_ARCHIVE_URL", "s3a://bucket/archive")
    assert load_settings().archive_url == "s3a://bucket/archive"
    assert load_settings(archive_url=str(tmp_path / "a")).archive_url == str(tmp_path / "a")
