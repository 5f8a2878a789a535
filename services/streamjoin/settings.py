"""The configuration contract every service reads (README.md, "Configuration").

Precedence: command-line flags, then environment variables prefixed `STREAMJOIN_`, then the defaults
below. Settings are built at start-up by `load_settings`, never at import, so a test or a command can
build them with its own flags and environment.

>>> settings = load_settings(kafka_bootstrap="127.0.0.1:19092")
>>> settings.kafka_bootstrap
'127.0.0.1:19092'
>>> settings.as_env()["STREAMJOIN_KAFKA_BOOTSTRAP"]
'127.0.0.1:19092'
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, FilePath, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "ENV_PREFIX",
    "KafkaSecurityProtocol",
    "SaslMechanism",
    "Settings",
    "load_settings",
    "user_data_dir",
]

ENV_PREFIX = "STREAMJOIN_"

KafkaSecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
"""How the clients talk to the brokers: Kafka's `security.protocol`."""

SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
"""The SASL mechanisms every client of the product supports (aiokafka, librdkafka, Java)."""

_MIN_KEY_CHARS = 32
_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_TLS_PROTOCOLS = ("SSL", "SASL_SSL")
_SPARK_MASTER = re.compile(
    r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|spark://[^\s:/,]+:\d+(,[^\s:/,]+:\d+)*"
    r"|yarn|k8s://\S+"
)


def user_data_dir() -> Path:
    """Return the default data directory: `$XDG_DATA_HOME/streamjoin`, else `~/.local/share/streamjoin`.

    >>> user_data_dir().name
    'streamjoin'
    """
    base = os.environ.get("XDG_DATA_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "streamjoin"


class Settings(BaseSettings):
    """Where the services find Kafka, Redis, the control plane and the archive."""

    # hide_input_in_errors: an error must not echo the input, which may hold the SASL password.
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="ignore", frozen=True, hide_input_in_errors=True
    )

    kafka_bootstrap: str = Field(
        default="127.0.0.1:9092", description="Broker address(es), `host:port[,host:port]`."
    )
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0",
        description=(
            "Redis URL, `redis://[:password@]host:port/db` (`rediss://` for TLS); a Redis Cluster: "
            "`redis+cluster://host:port[,host:port...]` (`rediss+cluster://`)."
        ),
    )
    redis_cluster: bool = Field(
        default=False, description="Treat a `redis://` URL as one node of a Redis Cluster."
    )
    redis_commit_replicas: int = Field(
        default=0,
        ge=0,
        description=(
            "Replicas that must hold each state commit before it counts (`WAIT`): 1 keeps exactly "
            'once across a replica\'s promotion (docs/deploy.md, "Redis Cluster"); 0: do not wait.'
        ),
    )
    redis_commit_wait_ms: int = Field(
        default=1_000, gt=0, description="How long a commit waits for its replicas before failing."
    )
    api_host: str = Field(default="127.0.0.1", description="Where the control plane listens.")
    api_port: int = Field(default=8080, ge=0, le=65535, description="Control-plane port (0: any free).")
    api_token: SecretStr | None = Field(default=None, description="Bearer token required for writes.")
    registry_key: SecretStr | None = Field(
        default=None,
        description=(
            "The secret that authenticates the registry's log (HMAC-SHA256 of every record; "
            'docs/registry.md, "Authentication"): at least 32 characters; production mode requires it.'
        ),
    )
    archive_url: str = Field(
        default="",
        description="Where the archiver writes and the back-fill reads: a local path or a URL "
        "(`s3a://...`). Default: `archive/` in the data directory, never the working directory.",
    )
    data_dir: Path = Field(
        default_factory=user_data_dir,
        description="Where the services keep their files: the control plane's back-fill jobs and their "
        "Parquet output (`backfill-jobs/`, `backfill-out/`). Default: `$XDG_DATA_HOME/streamjoin`, else "
        "`~/.local/share/streamjoin`; `streamjoin dev up` uses its work directory.",
    )
    schema_registry_url: str | None = Field(
        default=None,
        description="A Confluent-compatible schema registry, for Avro streams and outputs (docs/formats.md).",
    )
    production: bool = Field(default=False, description="Production mode: stricter start-up checks.")
    topics_file: Path | None = Field(
        default=None, description="The topic declaration; default: `topics/topics.json` of the repository."
    )
    kafka_security_protocol: KafkaSecurityProtocol = Field(
        default="PLAINTEXT", description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."
    )
    kafka_sasl_mechanism: SaslMechanism | None = Field(
        default=None, description="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL_* protocols only)."
    )
    kafka_sasl_username: str | None = Field(default=None, description="SASL user name.")
    kafka_sasl_password: SecretStr | None = Field(default=None, description="SASL password.")
    kafka_tls_ca_file: FilePath | None = Field(
        default=None, description="PEM file of the CA(s) that signed the brokers' certificates."
    )
    kafka_tls_cert_file: FilePath | None = Field(
        default=None, description="PEM client certificate, for mutual TLS (with the key file)."
    )
    kafka_tls_key_file: FilePath | None = Field(
        default=None, description="PEM private key (unencrypted PKCS#8) of the client certificate."
    )
    kafka_listed_ends_exact: bool = Field(
        default=True,
        description=(
            "The brokers list a partition's end exactly (ListOffsets: the high watermark), as Apache Kafka "
            "does. False for one that lists the last record batch's first offset (the embedded Tansu): a "
            "partition's end is then read from a fetch response, which waits out the fetch wait when empty."
        ),
    )
    kafka_allow_plaintext: bool = Field(
        default=False,
        description="Production mode only: accept a PLAINTEXT (unencrypted, unauthenticated) Kafka link.",
    )
    redis_max_connections: int = Field(
        default=256,
        gt=0,
        le=10_000,
        description="Connections a worker's state store may open to Redis; more commands wait for one.",
    )
    max_future: float | None = Field(
        default=604_800_000,
        ge=0,
        allow_inf_nan=False,
        description=(
            "How far ahead of the newest timestamp its input has shown a record's timestamp may be (the "
            "query's unit, usually ms; default 7 days) before it is dead-lettered."
        ),
    )
    max_record_bytes: int = Field(
        default=1_000_000,
        ge=1024,
        description="The largest result or dead letter the joiner publishes (below max.message.bytes).",
    )
    joiner_registry_lag_ms: int = Field(
        default=30_000,
        gt=0,
        description="A joiner is not ready (`/readyz` 503) once the registry's latest version has gone "
        'unapplied this long (docs/joiner.md, "Readiness").',
    )
    joiner_layout_concurrency: int = Field(
        default=4,
        gt=0,
        le=64,
        description="Queries a joiner lays out at once (creates their topics), off its running operators.",
    )
    joiner_slots: int = Field(
        default=64,
        gt=0,
        le=10_000,
        description="Partitions of the joiners' slots topic (`streamjoin.joiner.slots`), which their "
        "consumer group assigns: at most this many joiners run operators. Every joiner of a group must "
        'use the same count as the topic (a joiner that differs does not start; docs/joiner.md, "Slots").',
    )
    redis_tls_ca_file: FilePath | None = Field(
        default=None, description="PEM file of the CA that signed Redis's certificate (`rediss://` only)."
    )
    spark_master: str | None = Field(
        default=None,
        description="The back-fill's Spark master (`local[2]`, `spark://host:7077`, `yarn`, `k8s://...`); "
        "default: spark-submit's, else `local[2]`.",
    )

    @field_validator("kafka_bootstrap")
    @classmethod
    def _check_bootstrap(cls, value: str) -> str:
        servers = [part.strip() for part in value.split(",")]
        for server in servers:
            host, sep, port = server.rpartition(":")
            if not sep or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
                raise ValueError(f"{server!r} is not host:port (in {value!r})")
        return ",".join(servers)

    @field_validator("registry_key")
    @classmethod
    def _check_registry_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < _MIN_KEY_CHARS:
            raise ValueError(
                f"{_env('registry_key')} must be at least {_MIN_KEY_CHARS} characters "
                "(e.g. `openssl rand -hex 32`)"
            )
        return value

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str) -> str:
        if not value.startswith(
            ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")
        ):
            raise ValueError(f"{value!r} is not a redis://, rediss://, unix:// or redis+cluster:// URL")
        return value

    @field_validator("spark_master")
    @classmethod
    def _check_spark_master(cls, value: str | None) -> str | None:
        if value is not None and not _SPARK_MASTER.fullmatch(value.strip()):
            raise ValueError(
                f"{value!r} is not a Spark master URL: local, local[N], local[*], "
                "spark://host:port[,host:port], yarn or k8s://https://host:port"
            )
        return None if value is None else value.strip()

    @field_validator("kafka_security_protocol", "kafka_sasl_mechanism", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _archive_in_the_data_dir(cls, values: Any) -> Any:
        """An unset archive goes under the data directory, as the back-fill jobs' files do: a
        command run from a checkout must not write into it."""
        if isinstance(values, dict) and not values.get("archive_url"):
            data_dir = values.get("data_dir") or user_data_dir()
            values = {**values, "archive_url": str(Path(data_dir) / "archive")}
        return values

    @model_validator(mode="after")
    def _check_security(self) -> Settings:
        protocol = self.kafka_security_protocol
        given = f"{ENV_PREFIX}KAFKA_SECURITY_PROTOCOL={protocol}"
        sasl = {
            "kafka_sasl_mechanism": self.kafka_sasl_mechanism,
            "kafka_sasl_username": self.kafka_sasl_username,
            "kafka_sasl_password": self.kafka_sasl_password.get_secret_value()
            if self.kafka_sasl_password is not None
            else None,
        }
        if protocol in _SASL_PROTOCOLS:
            missing = [_env(name) for name, value in sasl.items() if not value]
            if missing:
                raise ValueError(f"{given} needs {', '.join(missing)}")
        else:
            extra = [_env(name) for name, value in sasl.items() if value]
            if extra:
                raise ValueError(f"{', '.join(extra)} given, but {given} does not use SASL")
        if (self.kafka_tls_cert_file is None) != (self.kafka_tls_key_file is None):
            only = "kafka_tls_cert_file" if self.kafka_tls_key_file is None else "kafka_tls_key_file"
            raise ValueError(
                f"{_env('kafka_tls_cert_file')} and {_env('kafka_tls_key_file')} go together (mutual TLS): "
                f"only {_env(only)} is set"
            )
        tls = ("kafka_tls_ca_file", "kafka_tls_cert_file", "kafka_tls_key_file")
        extra = [_env(name) for name in tls if getattr(self, name) is not None]
        if extra and protocol not in _TLS_PROTOCOLS:
            raise ValueError(f"{', '.join(extra)} given, but {given} does not use TLS (use SSL or SASL_SSL)")
        if self.production and protocol == "PLAINTEXT" and not self.kafka_allow_plaintext:
            raise ValueError(
                f"production mode refuses a plaintext, unauthenticated Kafka connection ({given}): use "
                "SASL_SSL, SASL_PLAINTEXT or SSL with their STREAMJOIN_KAFKA_SASL_* / STREAMJOIN_KAFKA_TLS_* "
                '(docs/deploy.md, "Kafka security"), or set '
                f"{_env('kafka_allow_plaintext')}=true to accept it"
            )
        if self.redis_tls_ca_file is not None and not self.redis_url.startswith(
            ("rediss://", "rediss+cluster://")
        ):
            raise ValueError(
                f"{_env('redis_tls_ca_file')} given, but {_env('redis_url')} is not a rediss:// (TLS) URL"
            )
        return self

    def as_env(self) -> dict[str, str]:
        """Return these settings as `STREAMJOIN_*` environment variables, for a child process."""
        env: dict[str, str] = {}
        for name, value in self.model_dump().items():
            if value is None:
                continue
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            env[f"{ENV_PREFIX}{name.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
        return env


def _env(field: str) -> str:
    """Return a field's environment variable: `kafka_sasl_username` -> `STREAMJOIN_KAFKA_SASL_USERNAME`."""
    return f"{ENV_PREFIX}{field.upper()}"


def load_settings(**flags: Any) -> Settings:
    """Build the settings: `flags` whose value is not None win over the environment and defaults.

    Args:
        flags: command-line values by field name (`kafka_bootstrap=...`); None means "not given".
    """
    return Settings(**{name: value for name, value in flags.items() if value is not None})
