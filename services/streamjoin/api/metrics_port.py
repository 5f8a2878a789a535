"""`STREAMJOIN_METRICS_PORT`: a second port of the control plane that serves `/metrics` alone, open.

In production mode every read needs the token, `/metrics` on the API port included; a Prometheus
then scrapes this port instead, as it scrapes any exporter: it binds the API host (the same
interface as the API), answers `GET /metrics` without a token and 404 to anything else, so the
registry, the Control Tables and the results are never readable there. One uvicorn server listens
on both sockets (`listening_sockets`); `MetricsPort` hands the requests of this port to a small app
that shares the control plane's state (its registry store and restore guard).
"""

from __future__ import annotations

import socket

import uvicorn
from fastapi import FastAPI

from streamjoin.api.config import ApiSettings
from streamjoin.api.errors import install_error_handlers
from streamjoin.api.limits import App, Receive, Scope, Send
from streamjoin.api.routes import metrics

__all__ = ["MetricsPort", "listening_sockets"]


class MetricsPort:
    """ASGI middleware: a request that arrived on the metrics port goes to the `/metrics`-only app."""

    def __init__(self, app: App, main: FastAPI, port: int) -> None:
        """Wrap `app` (the control plane's stack); `main`: the app whose state the metrics app shares;
        `port`: `STREAMJOIN_METRICS_PORT`."""
        self.app = app
        self._port = port
        self._metrics = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        self._metrics.state = main.state  # the store and guard the lifespan of `main` opens
        install_error_handlers(self._metrics)
        self._metrics.include_router(metrics.router)  # without the token dependency of the API port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request of the metrics port with the metrics app, any other with the wrapped app."""
        server = scope.get("server")
        if scope["type"] == "http" and server is not None and server[1] == self._port:
            await self._metrics(scope, receive, send)
            return
        await self.app(scope, receive, send)


def listening_sockets(config: uvicorn.Config, settings: ApiSettings) -> list[socket.socket]:
    """Return the bound sockets of `config` (the API port) and, when set, of the metrics port on the
    same host; pass them to `uvicorn.Server.run(sockets=...)`."""
    sockets = [config.bind_socket()]
    if settings.metrics_port is not None:
        port = uvicorn.Config(config.app, host=config.host, port=settings.metrics_port, log_config=None)
        sockets.append(port.bind_socket())
    return sockets
