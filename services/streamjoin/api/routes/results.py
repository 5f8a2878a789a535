"""`/v1/queries/{name}/results`: a query's results as Server-Sent Events or NDJSON, from its output topic."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query
from fastapi.responses import StreamingResponse

from streamjoin.api.deps import QueryServiceDep, ResultServiceDep, SettingsDep
from streamjoin.api.errors import ApiError
from streamjoin.api.routes.responses import errors
from streamjoin.api.services import ResultEvent
from streamjoin.api.services.results import StartAt

__all__ = ["router"]

router = APIRouter(prefix="/queries/{name}", tags=["results"])

SSE = "text/event-stream"
NDJSON = "application/x-ndjson"


def _start(raw: str) -> StartAt:
    if raw in ("latest", "earliest"):
        return raw  # type: ignore[return-value]  # narrowed by the membership test
    if raw.isascii() and raw.isdigit() and len(raw) <= 16:  # isdigit alone accepts "³", int() does not
        return int(raw)
    raise ApiError(422, "invalid_request", 'must be "latest", "earliest" or a timestamp in ms', field="from")


def _sse(event: ResultEvent, name: str, count: int) -> str:
    if event.kind == "result":
        return f"id: {event.id}\ndata: {json.dumps(event.value, separators=(',', ':'))}\n\n"
    if event.kind == "positioned":
        return f"event: positioned\ndata: {json.dumps({'query': name})}\n\n"
    if event.kind == "keepalive":
        return ": keep-alive\n\n"
    return f"event: end\ndata: {json.dumps({'query': name, 'reason': event.reason, 'count': count})}\n\n"


async def _body(
    first: ResultEvent, rest: AsyncGenerator[ResultEvent, None], name: str, sse: bool
) -> AsyncIterator[str]:
    count = 0
    event: ResultEvent | None = first
    try:
        while event is not None:
            if event.kind == "result":
                count += 1
            if sse:
                yield _sse(event, name, count)
            elif event.kind == "result":
                yield json.dumps(event.value, separators=(",", ":")) + "\n"
            event = await anext(rest, None)
    finally:
        await rest.aclose()


@router.get(
    "/results",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "Results, one per SSE event or NDJSON line; the answer starts once positioned.",
            "content": {SSE: {"schema": {"type": "string"}}, NDJSON: {"schema": {"type": "string"}}},
        },
        **errors(404, 422),
    },
)
async def stream_results(
    name: str,
    queries: QueryServiceDep,
    results: ResultServiceDep,
    settings: SettingsDep,
    output_format: Annotated[
        Literal["sse", "ndjson"] | None, Query(alias="format", description="Overrides the Accept header.")
    ] = None,
    start: Annotated[
        str, Query(alias="from", description='"latest", "earliest" or a timestamp (ms).')
    ] = "latest",
    limit: Annotated[int, Query(ge=1, description="End after this many results.")] = 100,
    timeout_ms: Annotated[
        int | None, Query(ge=1, description="End after this long (default: configured).")
    ] = None,
    accept: Annotated[str, Header()] = "",
) -> StreamingResponse:
    """Stream the query's results from its output topic, from `latest` (default), `earliest` or a time."""
    start_at = _start(start)
    if limit > settings.api_results_max_limit:
        raise ApiError(422, "invalid_request", f"must be <= {settings.api_results_max_limit}", field="limit")
    timeout = timeout_ms if timeout_ms is not None else settings.api_results_timeout_ms
    if timeout > settings.api_results_max_timeout_ms:
        raise ApiError(
            422, "invalid_request", f"must be <= {settings.api_results_max_timeout_ms}", field="timeout_ms"
        )
    query = await queries.get(name)
    sse = output_format == "sse" or (output_format is None and SSE in accept)
    events = results.stream(
        query.definition["output"]["topic"], start=start_at, limit=limit, timeout_ms=timeout
    )
    first = await anext(events)  # positioned (or the end): the answer starts once reading is positioned
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(
        _body(first, events, name, sse), media_type=SSE if sse else NDJSON, headers=headers
    )
