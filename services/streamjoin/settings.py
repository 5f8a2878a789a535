"""The configuration contract every service reads (architecture.md, "Configuration").

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

from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ENV_PREFIX", "Settings", "load_settings"]

ENV_PREFIX = "STREAMJOIN_"


class Settings(BaseSettings):
    """Where the services find Kafka, Redis, the control plane and the archive."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    kafka_bootstrap: str = Field(
        default="127.0.0.1:9092", description="Broker address(es), `host:port[,host:port]`."
    )
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0",
        description="Redis URL, `redis://[:password@]host:port/db` (`rediss://` for TLS).",
    )
    api_host: str = Field(default="127.0.0.1", description="Where the control plane listens.")
    api_port: int = Field(default=8080, ge=0, le=65535, description="Control-plane port (0: any free).")
    api_token: SecretStr | None = Field(default=None, description="Bearer token required for writes.")
    archive_url: str = Field(default="./archive", description="Where the archiver writes.")
    production: bool = Field(default=False, description="Production mode: stricter start-up checks.")
    topics_file: Path | None = Field(
        default=None, description="The topic declaration; default: `topics/topics.json` of the repository."
    )

    @field_validator("kafka_bootstrap")
    @classmethod
    def _check_bootstrap(cls, value: str) -> str:
        servers = [part.strip() for part in value.split(",")]
        for server in servers:
            host, sep, port = server.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{server!r} is not host:port (in {value!r})")
        return ",".join(servers)

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"{value!r} is not a redis://, rediss:// or unix:// URL")
        return value

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


def load_settings(**flags: Any) -> Settings:
    """Build the settings: `flags` whose value is not None win over the environment and defaults.

    Args:
        flags: command-line values by field name (`kafka_bootstrap=...`); None means "not given".
    """
    return Settings(**{name: value for name, value in flags.items() if value is not None})
