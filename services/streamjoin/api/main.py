"""The control plane's app factory: `create_app(settings)` mounts the routers on a FastAPI app.

The registry store opens at start-up (lifespan) with its durable log, is restored from the log if
Redis lost it (`RegistryGuard`), and closes at shutdown; nothing is built at import.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

import streamjoin
from streamjoin.api.config import ApiSettings, ConfigurationError, check_api_settings
from streamjoin.api.errors import install_error_handlers
from streamjoin.api.limits import RequestGuard
from streamjoin.api.metrics_port import MetricsPort
from streamjoin.api.restore import RegistryGuard
from streamjoin.api.routes import docs_router, health_router, metrics_router, ui_router, v1_router
from streamjoin.api.services.limits import RegistrationLimits
from streamjoin.api.services.registration import RegistrationCheck
from streamjoin.backfill.jobs import BackfillJobs
from streamjoin.client_security import aiokafka_options
from streamjoin.registry import KafkaRegistryLog, RegistryStore

__all__ = ["create_app"]

_log = logging.getLogger(__name__)


def create_app(settings: ApiSettings) -> FastAPI:
    """Return the control-plane app for `settings`; raise `ConfigurationError` if they are unsafe."""
    check_api_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.api_token is None:
            _log.warning("no STREAMJOIN_API_TOKEN: writes are open (development mode only)")
        if settings.registry_key is None:
            _log.warning(
                "no STREAMJOIN_REGISTRY_KEY: the registry's log is not authenticated, and whoever can "
                "write its topic can register queries through a restore (development mode only)"
            )
        # production: the topic job created the log's topic; a missing one is a misconfiguration
        log = KafkaRegistryLog.from_settings(
            settings, settings.api_registry_topic, require_topic=settings.production
        )
        async with RegistryStore.from_settings(
            settings, prefix=settings.api_registry_prefix, log=log
        ) as store:
            problem = await store.eviction_problem()
            if problem is not None:
                raise ConfigurationError(f"refusing to start: {problem}")
            guard = RegistryGuard(
                store,
                check=RegistrationCheck(RegistrationLimits.of(settings)),
                check_ms=settings.api_registry_check_ms,
            )
            if not await guard.start(wait_ms=settings.api_registry_restore_wait_ms):
                _log.warning("the registry is not restored yet: requests get 503 until it is")
            app.state.store = store
            app.state.registry_guard = guard
            app.state.backfill_jobs = BackfillJobs(
                settings.backfill_jobs_dir, env=settings.as_env(), out_root=settings.backfill_out_dir
            )
            try:
                yield
            finally:
                await guard.stop()
                log.close()

    app = FastAPI(
        title="streamjoin control plane",
        version=getattr(streamjoin, "__version__", "0"),
        description="Register streams and continuous multi-way joins; read and write their Control Tables.",
        lifespan=lifespan,
        # FastAPI's pages load Swagger UI and ReDoc from a CDN: ours serve them from a package.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    # One TLS context for every Kafka client of the app; a bad CA or key file fails here, at start-up.
    app.state.kafka_options = aiokafka_options(settings)
    install_error_handlers(app)
    # outermost: a write's token and body size are checked before anything reads the body
    app.add_middleware(RequestGuard, settings=settings)
    if settings.metrics_port is not None:  # outermost: its requests never reach the API's routes
        app.add_middleware(MetricsPort, main=app, port=settings.metrics_port)
    app.include_router(v1_router)
    app.include_router(metrics_router)
    app.include_router(health_router)
    app.include_router(ui_router)
    app.include_router(docs_router)
    return app
