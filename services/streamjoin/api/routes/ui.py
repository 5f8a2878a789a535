"""`/ui`: the console, a server-rendered page whose script reads and writes the REST API.

The page and its static files carry no data, so they need no token; the data come from `/v1` under
the API's own rules (reads open unless configured otherwise, writes with the token), and the plan
picture (`/ui/queries/{name}/plan.svg`) follows the read rule. Every answer carries a strict CSP.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse, Response

import streamjoin
from streamjoin.api.deps import PlanServiceDep, QueryServiceDep
from streamjoin.api.errors import ApiError
from streamjoin.api.routes.responses import errors
from streamjoin.api.security import authorize
from streamjoin.api.ui import CSP, plan_svg, render_page, static_file

__all__ = ["router"]

router = APIRouter(prefix="/ui", tags=["console"], include_in_schema=False)

_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


@router.get("", response_class=HTMLResponse)
async def console() -> HTMLResponse:
    """The console page."""
    page = render_page(getattr(streamjoin, "__version__", "0"))
    return HTMLResponse(page, headers={**_HEADERS, "Cache-Control": "no-store"})


@router.get("/static/{name}")
async def static(name: str) -> Response:
    """The console's script and style sheet."""
    found = static_file(name)
    if found is None:
        raise ApiError(404, "not_found", f"the console has no file {name!r}")
    body, media_type = found
    return Response(body, media_type=media_type, headers={**_HEADERS, "Cache-Control": "no-cache"})


@router.get("/queries/{name}/plan.svg", dependencies=[Depends(authorize)], responses=errors(404))
async def plan_picture(name: str, plans: PlanServiceDep, queries: QueryServiceDep) -> Response:
    """A query's plan drawn as SVG: its streams, the order each origin probes, estimated vs observed cost."""
    query = await queries.get(name)
    streams = [str(i["stream"]) for i in query.definition["inputs"]]
    svg = plan_svg(await plans.get(name), streams)
    return Response(svg, media_type="image/svg+xml", headers={**_HEADERS, "Cache-Control": "no-store"})
