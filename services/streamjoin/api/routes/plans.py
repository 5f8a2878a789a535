"""`/v1/queries/{name}/plan` and `/replan`: the join orders chosen, and a request to choose again."""

from __future__ import annotations

from fastapi import APIRouter, status

from streamjoin.api.deps import PlanServiceDep
from streamjoin.api.routes.responses import errors
from streamjoin.api.schemas import PlanPublic, ReplanPublic

__all__ = ["router"]

router = APIRouter(prefix="/queries/{name}", tags=["plans"])


@router.get("/plan", responses=errors(404))
async def get_plan(name: str, service: PlanServiceDep) -> PlanPublic:
    """Read the global and per-origin join orders, estimated and observed cost, and their statistics."""
    return await service.get(name)


@router.post("/replan", status_code=status.HTTP_202_ACCEPTED, responses=errors(404))
async def replan(name: str, service: PlanServiceDep) -> ReplanPublic:
    """Ask the joiners to re-plan the query from current statistics; accepted, done asynchronously."""
    return await service.replan(name)
