"""`/v1/control`: STREAM's Control Tables of queries, windows, join operators and topics."""

from __future__ import annotations

from fastapi import APIRouter

from streamjoin.api.deps import ControlServiceDep
from streamjoin.api.routes.responses import errors
from streamjoin.api.schemas import ControlTable, ControlUpdate, EntityKind

__all__ = ["router"]

router = APIRouter(prefix="/control", tags=["control"])


@router.get("", responses=errors())
async def list_control_tables(service: ControlServiceDep) -> list[ControlTable]:
    """Read every entity's Control Table."""
    return await service.tables()


@router.get("/{kind}", responses=errors(422))
async def list_control_tables_of(kind: EntityKind, service: ControlServiceDep) -> list[ControlTable]:
    """Read the Control Tables of one kind of entity: queries, windows, operators or topics."""
    return await service.tables(kind)


@router.get("/{kind}/{name}", responses=errors(404, 422))
async def get_control_table(kind: EntityKind, name: str, service: ControlServiceDep) -> ControlTable:
    """Read one entity's Control Table (a window is named `query.stream`)."""
    return await service.table(kind, name)


@router.patch("/queries/{name}", responses=errors(404, 409, 422))
async def update_query_controls(name: str, body: ControlUpdate, service: ControlServiceDep) -> ControlTable:
    """Write a query's controls: evaluation, expiration (mode, interval), order, paused, shedding budget."""
    return await service.update_query(name, body)
