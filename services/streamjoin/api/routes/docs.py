"""`/docs` (Swagger UI) and `/redoc` (ReDoc) with their assets served by the app itself, not a CDN.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so they are blank on a machine without
internet. Here the pages are FastAPI's (`get_swagger_ui_html`, `get_redoc_html`) pointed at
`/docs/static/...`, which serves the files of the installed `fastapi-offline` package (Swagger UI 5,
which reads the OpenAPI 3.1 that FastAPI writes, and ReDoc): nothing is copied into this
repository, and the pages load nothing from elsewhere (no Google fonts either).
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from streamjoin.api.errors import ApiError

__all__ = ["ASSETS", "STATIC", "router"]

STATIC = "/docs/static"
"""Where the pages' script, style sheet and icon are served."""

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}
"""The files served under `STATIC`, from the `fastapi_offline` package, with their media types."""

router = APIRouter(include_in_schema=False)

_TITLE = "streamjoin control plane"


@router.get("/docs", response_class=HTMLResponse)
async def swagger_ui() -> HTMLResponse:
    """The interactive API reference (Swagger UI)."""
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title=f"{_TITLE} - Swagger UI",
        swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{STATIC}/swagger-ui.css",
        swagger_favicon_url=f"{STATIC}/favicon.png",
    )


@router.get("/redoc", response_class=HTMLResponse)
async def redoc() -> HTMLResponse:
    """The API reference as one page (ReDoc)."""
    return get_redoc_html(
        openapi_url="/openapi.json",
        title=f"{_TITLE} - ReDoc",
        redoc_js_url=f"{STATIC}/redoc.standalone.js",
        redoc_favicon_url=f"{STATIC}/favicon.png",
        with_google_fonts=False,
    )


@router.get(STATIC + "/{name}")
async def asset(name: str) -> Response:
    """One file of Swagger UI or ReDoc, from the installed package."""
    media_type = ASSETS.get(name)
    if media_type is None:
        raise ApiError(404, "not_found", f"the API reference has no file {name!r}")
    body = resources.files("fastapi_offline").joinpath("static", name).read_bytes()
    return Response(body, media_type=media_type, headers={"Cache-Control": "public, max-age=86400"})
