"""`/healthz` (liveness) and `/readyz` (Redis and the broker answer); never behind a token."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

import streamjoin
from streamjoin.api.deps import HealthServiceDep
from streamjoin.api.schemas import Health, Readiness

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> Health:
    """Answer while the process serves requests."""
    return Health(version=getattr(streamjoin, "__version__", "0"))


@router.get("/readyz", responses={503: {"model": Readiness, "description": "A dependency does not answer."}})
async def readyz(service: HealthServiceDep, response: Response) -> Readiness:
    """Answer 200 when Redis and the broker answer, else 503 with the failing check."""
    readiness = await service.readiness()
    if not readiness.ready:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return readiness
