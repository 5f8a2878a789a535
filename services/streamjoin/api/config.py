"""The control plane's settings: the shared contract (`streamjoin.settings`) plus the API's own.

Built at start-up by `load_api_settings` (flags, then `STREAMJOIN_*` variables, then defaults), never
at import. `check_api_settings` refuses a production configuration without a write token or a
registry key.

>>> s = load_api_settings(api_port=9000)
>>> production = load_api_settings(production=True, kafka_allow_plaintext=True)
>>> s.api_port, s.reads_need_token, production.reads_need_token
(9000, False, True)
>>> check_api_settings(production)
Traceback (most recent call last):
...
streamjoin.api.config.ConfigurationError: production mode needs STREAMJOIN_API_TOKEN (the write token)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from streamjoin.settings import Settings

__all__ = [
    "ApiSettings",
    "ConfigurationError",
    "check_api_settings",
    "load_api_settings",
]


class ConfigurationError(RuntimeError):
    """The settings cannot run the control plane (raised at start-up)."""


class ApiSettings(Settings):
    """Settings of `streamjoin api`; every field is also a `STREAMJOIN_<NAME>` variable."""

    api_read_token_required: bool = Field(
        default=False,
        description="Require the bearer token for reads too (health checks stay open); production mode does.",
    )
    metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="A second port on the API host serving only /metrics, without a token (for Prometheus).",
    )
    api_registry_prefix: str = Field(
        default="streamjoin:", description="Key prefix of the registry in Redis (tests isolate with it)."
    )
    api_registry_topic: str = Field(
        default="streamjoin.registry",
        description="The registry's durable log: a compacted topic written before Redis (docs/registry.md).",
    )
    api_registry_restore_wait_ms: int = Field(
        default=30_000, gt=0, description="How long start-up waits for the registry's restore before serving."
    )
    api_registry_check_ms: int = Field(
        default=500, gt=0, description="How often the registry's epoch is checked (a Redis restarted empty)."
    )
    api_results_timeout_ms: int = Field(
        default=30_000, gt=0, description="Default time a results request streams before it ends."
    )
    api_results_max_timeout_ms: int = Field(
        default=600_000, gt=0, description="Longest time a results request may ask to stream."
    )
    api_results_max_limit: int = Field(default=100_000, gt=0, description="Most results one request returns.")
    api_ready_timeout_ms: int = Field(default=3_000, gt=0, description="Time each readiness check may take.")
    api_log_level: str = Field(default="info", description="Log level of the control plane.")
    api_max_query_inputs: int = Field(default=16, gt=1, description="Most inputs one query may join.")
    api_max_queries: int = Field(default=100, gt=0, description="Most queries the deployment may hold.")
    api_max_pending_queries: int = Field(
        default=20,
        gt=0,
        description="Most registered queries no worker has laid out yet; more registrations get a 429.",
    )
    api_pending_retry_after_s: int = Field(
        default=5, gt=0, description="The `Retry-After` of a registration refused for the pending backlog."
    )
    api_state_budget_bytes: int = Field(
        default=1 << 30, gt=0, description="Largest estimated window state a query may register with."
    )
    api_default_stream_rate: float = Field(
        default=100.0, gt=0, description="Records per second assumed for a stream registered without one."
    )
    api_default_record_bytes: int = Field(
        default=1024, gt=0, description="Record size assumed for a stream registered without one."
    )
    api_backfill_dir: str | None = Field(
        default=None,
        description="Where back-fill jobs keep their query, status and log (default: `backfill-jobs` in "
        "STREAMJOIN_DATA_DIR).",
    )
    api_backfill_out_dir: str | None = Field(
        default=None,
        description="The only directory a back-fill's Parquet `out` may write into (relative to it; default: "
        "`backfill-out` in STREAMJOIN_DATA_DIR).",
    )
    api_max_body_bytes: int = Field(
        default=2 << 20,
        ge=1024,
        description="Largest request body accepted (413 beyond, before it is read; checked after the token).",
    )

    @property
    def reads_need_token(self) -> bool:
        """Return whether reads (and `/metrics` on the API port) need the token: production mode, or
        `STREAMJOIN_API_READ_TOKEN_REQUIRED`."""
        return self.production or self.api_read_token_required

    @property
    def backfill_jobs_dir(self) -> Path:
        """Return where back-fill jobs live: `api_backfill_dir`, else `backfill-jobs` in the data dir."""
        given = self.api_backfill_dir
        return Path(given) if given else self.data_dir / "backfill-jobs"

    @property
    def backfill_out_dir(self) -> Path:
        """Return the directory back-fill output is confined to (`api_backfill_out_dir`, else the data
        dir's `backfill-out`)."""
        given = self.api_backfill_out_dir
        return Path(given) if given else self.data_dir / "backfill-out"

    @model_validator(mode="after")
    def _check_ports(self) -> ApiSettings:
        if self.metrics_port is not None and self.metrics_port == self.api_port:
            raise ValueError("STREAMJOIN_METRICS_PORT must differ from STREAMJOIN_API_PORT")
        return self


def load_api_settings(**flags: Any) -> ApiSettings:
    """Build the API settings; `flags` whose value is not None win over the environment and defaults."""
    return ApiSettings(**{name: value for name, value in flags.items() if value is not None})


def check_api_settings(settings: ApiSettings) -> None:
    """Raise `ConfigurationError` if the control plane must not start with `settings`."""
    token = settings.api_token.get_secret_value() if settings.api_token is not None else ""
    if settings.production and not token:
        raise ConfigurationError("production mode needs STREAMJOIN_API_TOKEN (the write token)")
    if settings.production and settings.registry_key is None:
        raise ConfigurationError(
            "production mode needs STREAMJOIN_REGISTRY_KEY (the key that authenticates the registry's log)"
        )
    if settings.api_read_token_required and not token:
        raise ConfigurationError("STREAMJOIN_API_READ_TOKEN_REQUIRED needs STREAMJOIN_API_TOKEN")
