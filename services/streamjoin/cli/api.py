"""`streamjoin api`: run the control plane (FastAPI on uvicorn) in the foreground.

Binds 127.0.0.1:8080 unless told otherwise (`--host`/`--port`, `STREAMJOIN_API_HOST`/`_PORT`), and
`STREAMJOIN_METRICS_PORT` on the same host when set (`/metrics` alone, docs/api.md),
logs to stderr, and exits cleanly on SIGTERM or Ctrl-C within 10 s (open result streams are cut
after a 5 s grace period). The write token comes from `STREAMJOIN_API_TOKEN` only, never a flag,
so it does not show in the process list.
"""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType
from typing import Annotated, Any

import typer

from streamjoin.cli.logs import LOG_FORMAT

__all__ = ["register", "run_api", "uvicorn_log_config"]

_GRACE_S = 5


def register(app: typer.Typer) -> None:
    """Mount `streamjoin api` on the main command."""
    app.command("api")(run_api)


def uvicorn_log_config(level: str) -> dict[str, Any]:
    """Return a logging config that sends uvicorn's and streamjoin's logs (access too) to stderr."""
    handler = {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": LOG_FORMAT}},
        "handlers": {"stderr": handler},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn.access": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "streamjoin": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
        },
    }


def run_api(
    host: Annotated[str | None, typer.Option(help="Address to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (default 8080).")] = None,
    redis_url: Annotated[str | None, typer.Option("--redis-url", help="Redis URL of the registry.")] = None,
    kafka_bootstrap: Annotated[
        str | None, typer.Option("--kafka-bootstrap", help="Broker address(es), host:port[,host:port].")
    ] = None,
    log_level: Annotated[str | None, typer.Option("--log-level", help="debug, info, warning, error.")] = None,
) -> None:
    """Run the control plane: REST API, Control Tables and /metrics."""
    import uvicorn

    from streamjoin.api import ConfigurationError, create_app, load_api_settings
    from streamjoin.api.metrics_port import listening_sockets

    try:
        settings = load_api_settings(
            api_host=host,
            api_port=port,
            redis_url=redis_url,
            kafka_bootstrap=kafka_bootstrap,
            api_log_level=log_level,
        )
        app = create_app(settings)
    except (ConfigurationError, ValueError, OSError) as exc:  # OSError: a TLS file ssl cannot load
        print(f"streamjoin api: {exc}", file=sys.stderr)
        raise typer.Exit(2) from exc
    level = settings.api_log_level.lower()
    logging.getLogger("streamjoin").setLevel(level.upper())
    config = uvicorn.Config(
        app,
        host=settings.api_host,
        port=settings.api_port,
        log_config=uvicorn_log_config(level),
        log_level=level,
        timeout_graceful_shutdown=_GRACE_S,
        proxy_headers=False,
        server_header=False,
    )
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler that was
    # installed before it: make that a no-op, so a requested stop is a clean exit (status 0).
    previous = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        sockets = listening_sockets(config, settings)  # the API port, and STREAMJOIN_METRICS_PORT if set
    except OSError as exc:
        print(f"streamjoin api: {exc}", file=sys.stderr)
        raise typer.Exit(2) from exc
    try:
        uvicorn.Server(config).run(sockets=sockets)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stopped(signum: int, frame: FrameType | None) -> None:
    """Accept the stop signal uvicorn re-raises after its graceful shutdown."""
