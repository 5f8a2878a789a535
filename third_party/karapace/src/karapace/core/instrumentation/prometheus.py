"""
karapace - prometheus instrumentation

Copyright (c) 2024 Aiven Ltd
See LICENSE for details
"""
# mypy: disable-error-code="call-overload"

from __future__ import annotations

from aiohttp.web import middleware, Request, Response
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from karapace.core.instrumentation.path_normalization import normalize_path
from karapace.rapu import HTTPResponse, RestApp
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from typing import Final, NoReturn

import logging

LOG = logging.getLogger(__name__)


class PrometheusInstrumentation:
    METRICS_ENDPOINT_PATH: Final[str] = "/metrics"
    CONTENT_TYPE_LATEST: Final[str] = "text/plain; version=0.0.4; charset=utf-8"

    registry: Final[CollectorRegistry] = CollectorRegistry()

    karapace_http_requests_total: Final[Counter] = Counter(
        registry=registry,
        name="karapace_http_requests_total",
        documentation="Total Request Count for HTTP/TCP Protocol",
        labelnames=("method", "path", "status"),
    )

    karapace_http_requests_in_progress: Final[Gauge] = Gauge(
        registry=registry,
        name="karapace_http_requests_in_progress",
        documentation="In-progress requests for HTTP/TCP Protocol",
        labelnames=("method", "path"),
    )

    @classmethod
    def setup_metrics(cls, *, app: RestApp) -> None:
        LOG.info("Setting up prometheus metrics")
        app.route(
            cls.METRICS_ENDPOINT_PATH,
            callback=cls.serve_metrics,
            method="GET",
            schema_request=False,
            with_request=False,
            json_body=False,
            auth=None,
        )
        app.app.middlewares.insert(0, cls.http_request_metrics_middleware)  # type: ignore[arg-type]

        # disable-error-code="call-overload" is used at the top of this file to allow mypy checks.
        # the issue is in the type difference (Counter, Gauge, etc) of the arguments which we are
        # passing to `__setitem__()`, but we need to keep these objects in the `app.app` dict.
        app.app[cls.karapace_http_requests_total] = cls.karapace_http_requests_total
        app.app[cls.karapace_http_requests_in_progress] = cls.karapace_http_requests_in_progress

    @classmethod
    async def serve_metrics(cls) -> NoReturn:
        metrics_data = generate_latest(cls.registry)
        # Raise HTTPResponse for RestApp compatibility
        raise HTTPResponse(
            body=metrics_data,
            status=HTTPStatus.OK,
            content_type=cls.CONTENT_TYPE_LATEST,
        )

    @classmethod
    @middleware
    async def http_request_metrics_middleware(
        cls,
        request: Request,
        handler: Callable[[Request], Awaitable[Response]],
    ) -> Response:
        # Extract request labels - normalize path to prevent unbounded cardinality
        path = normalize_path(request.path)
        method = request.method

        in_progress = request.app[cls.karapace_http_requests_in_progress].labels(method, path)
        in_progress.inc()

        try:
            response: Response = await handler(request)
            request.app[cls.karapace_http_requests_total].labels(method, path, response.status).inc()
            return response
        finally:
            in_progress.dec()
