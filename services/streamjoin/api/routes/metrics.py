"""`/metrics`: the Control-Table statistics in Prometheus' text format."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from streamjoin.api.deps import GuardDep, StoreDep
from streamjoin.api.metrics import render_metrics
from streamjoin.api.services import observe

__all__ = ["router"]

router = APIRouter(tags=["metrics"])


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}, "description": "Metrics."}
    },
)
async def metrics(store: StoreDep, guard: GuardDep) -> Response:
    """Export every statistic the joiners published, read from Redis now, and this process's own counts."""
    return Response(render_metrics(await observe(store), guard.refused), media_type=CONTENT_TYPE_LATEST)
