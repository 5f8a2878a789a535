"""`/v1/streams`: register a topic as a named stream; list, read and remove streams."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from streamjoin.api.deps import StreamServiceDep
from streamjoin.api.routes.responses import errors
from streamjoin.api.schemas import StreamCreate, StreamPublic

__all__ = ["router"]

router = APIRouter(prefix="/streams", tags=["streams"])


@router.post("", status_code=status.HTTP_201_CREATED, responses=errors(409, 422))
async def create_stream(body: StreamCreate, service: StreamServiceDep, response: Response) -> StreamPublic:
    """Register a stream: a topic of JSON records, its timestamp field and optional JSON schema."""
    stream = await service.create(body)
    response.headers["Location"] = f"/v1/streams/{stream.name}"
    return stream


@router.get("", responses=errors())
async def list_streams(service: StreamServiceDep) -> list[StreamPublic]:
    """List the registered streams."""
    return await service.list()


@router.get("/{name}", responses=errors(404))
async def get_stream(name: str, service: StreamServiceDep) -> StreamPublic:
    """Read one stream."""
    return await service.get(name)


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT, responses=errors(404, 409))
async def delete_stream(name: str, service: StreamServiceDep) -> None:
    """Remove a stream that no query reads."""
    await service.delete(name)
