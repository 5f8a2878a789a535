"""`/v1/queries`: register (JSON or CQL), list, read, replace, pause, resume and delete queries."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from streamjoin.api.deps import QueryServiceDep
from streamjoin.api.routes.responses import errors
from streamjoin.api.schemas import QueryCreate, QueryPublic, QueryUpdate, QueryValidation

__all__ = ["router", "validate_router"]

router = APIRouter(prefix="/queries", tags=["queries"])
validate_router = APIRouter(tags=["queries"])


@validate_router.post("/queries:validate", responses=errors(422))
async def validate_query(body: QueryCreate, service: QueryServiceDep) -> QueryValidation:
    """Check a query as registering it would (same body, same compile step, same 422s); store nothing."""
    return await service.validate(body)


@router.post("", status_code=status.HTTP_201_CREATED, responses=errors(409, 422, 429))
async def create_query(body: QueryCreate, service: QueryServiceDep, response: Response) -> QueryPublic:
    """Register a query, as query JSON or as CQL text over registered streams; joiners start it."""
    query = await service.create(body)
    response.headers["Location"] = f"/v1/queries/{query.name}"
    return query


@router.get("", responses=errors())
async def list_queries(service: QueryServiceDep) -> list[QueryPublic]:
    """List the registered queries with their status."""
    return await service.list()


@router.get("/{name}", responses=errors(404))
async def get_query(name: str, service: QueryServiceDep) -> QueryPublic:
    """Read one query: definition, controls, status per partition."""
    return await service.get(name)


@router.put("/{name}", responses=errors(404, 409, 422))
async def replace_query(name: str, body: QueryUpdate, service: QueryServiceDep) -> QueryPublic:
    """Replace a query's definition; joiners rebuild it (its state starts afresh)."""
    return await service.replace(name, body)


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT, responses=errors(404))
async def delete_query(name: str, service: QueryServiceDep) -> None:
    """Delete a query; joiners stop it and drop its state."""
    await service.delete(name)


@router.post("/{name}/pause", responses=errors(404, 409))
async def pause_query(name: str, service: QueryServiceDep) -> QueryPublic:
    """Pause a query (its `paused` control); its inputs wait, nothing is lost."""
    return await service.set_paused(name, True)


@router.post("/{name}/resume", responses=errors(404, 409))
async def resume_query(name: str, service: QueryServiceDep) -> QueryPublic:
    """Resume a paused query."""
    return await service.set_paused(name, False)
