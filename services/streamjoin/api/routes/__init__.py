"""The API's routers; `api/main.py` mounts them."""

from fastapi import APIRouter, Depends

from streamjoin.api.routes import (
    backfills,
    control,
    docs,
    health,
    metrics,
    plans,
    queries,
    results,
    streams,
    ui,
)
from streamjoin.api.security import authorize

__all__ = ["docs_router", "health_router", "metrics_router", "ui_router", "v1_router"]

v1_router = APIRouter(prefix="/v1", dependencies=[Depends(authorize)])
v1_router.include_router(streams.router)
v1_router.include_router(queries.validate_router)
v1_router.include_router(queries.router)
v1_router.include_router(plans.router)
v1_router.include_router(results.router)
v1_router.include_router(control.router)
v1_router.include_router(backfills.router)

metrics_router = APIRouter(dependencies=[Depends(authorize)])
metrics_router.include_router(metrics.router)

health_router = health.router

ui_router = ui.router

docs_router = docs.router
