"""The control plane's app factory: `create_app(settings)` mounts the routers on a FastAPI app.

The registry store opens at start-up (lifespan) and closes at shutdown; nothing is built at import.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

import streamjoin
from streamjoin.api.config import ApiSettings, check_api_settings
from streamjoin.api.errors import install_error_handlers
from streamjoin.api.limits import RequestGuard
from streamjoin.api.routes import health_router, metrics_router, v1_router
from streamjoin.backfill.jobs import BackfillJobs
from streamjoin.client_security import aiokafka_options
from streamjoin.registry import RegistryStore

__all__ = ["create_app"]

_log = logging.getLogger(__name__)


def create_app(settings: ApiSettings) -> FastAPI:
    """Return the control-plane app for `settings`; raise `ConfigurationError` if they are unsafe."""
    check_api_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.api_token is None:
            _log.warning("no STREAMJOIN_API_TOKEN: writes are open (development mode only)")
        async with RegistryStore.from_settings(settings, prefix=settings.api_registry_prefix) as store:
            app.state.store = store
            app.state.backfill_jobs = BackfillJobs(
                settings.api_backfill_dir, env=settings.as_env(), out_root=settings.api_backfill_out_dir
            )
            yield

    app = FastAPI(
        title="streamjoin control plane",
        version=getattr(streamjoin, "__version__", "0"),
        description="Register streams and continuous multi-way joins; read and write their Control Tables.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    # One TLS context for every Kafka client of the app; a bad CA or key file fails here, at start-up.
    app.state.kafka_options = aiokafka_options(settings)
    install_error_handlers(app)
    # outermost: a write's token and body size are checked before anything reads the body
    app.add_middleware(RequestGuard, settings=settings)
    app.include_router(v1_router)
    app.include_router(metrics_router)
    app.include_router(health_router)
    return app
