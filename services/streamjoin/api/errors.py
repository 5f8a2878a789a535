"""Map domain errors to HTTP answers with one body shape (`ErrorPublic`).

The service layer raises domain errors (`QueryError`, the registry's errors, `ApiError`); these
handlers turn them into 4xx answers that name the problem: 404 missing, 409 duplicate or in use,
422 invalid (with the offending `field`, and `position` for CQL). Redis out of reach is a 503 with
`Retry-After` (the request changed nothing it could not finish), never a 500; so is a registry being
restored from its log (or a write the log did not take).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fastapi import FastAPI, Request, status
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from streamjoin.api.schemas.common import ErrorPublic, FieldError
from streamjoin.backfill.jobs import OutPathError
from streamjoin.query import QueryError
from streamjoin.query.cql import CqlError
from streamjoin.registry import (
    AlreadyExistsError,
    ConcurrentChangeError,
    InUseError,
    NotFoundError,
    RegistryUnavailableError,
)
from streamjoin.registry.errors import UNAVAILABLE_ERRORS

__all__ = ["ApiError", "field_path", "install_error_handlers"]

_log = logging.getLogger(__name__)


class ApiError(Exception):
    """An answer other than success, raised by the service layer."""

    def __init__(
        self,
        status_code: int,
        code: str,
        detail: str,
        *,
        field: str | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.code = code
        self.detail = detail
        self.field = field
        self.retry_after_s = retry_after_s
        """Seconds after which the same request may succeed (the `Retry-After` header), if any."""


def field_path(loc: Sequence[int | str]) -> str:
    """Return a pydantic location as the query JSON path style: `inputs[0].window.range`.

    >>> field_path(("body", "inputs", 0, "window", "range"))
    'inputs[0].window.range'
    >>> field_path(("query", "limit"))
    'limit'
    """
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif "[" in part or "function-" in part or part in ("str", "int", "float", "bool", "list", "dict"):
            continue  # pydantic's union-member tags
        else:
            out += f".{part}" if out else part
    return out or "body"


def _answer(status_code: int, body: ErrorPublic, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status_code, headers=headers or None)


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, ApiError):
        raise exc
    headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == status.HTTP_401_UNAUTHORIZED else {}
    if exc.retry_after_s is not None:
        headers["Retry-After"] = str(exc.retry_after_s)
    return _answer(exc.status_code, ErrorPublic(detail=exc.detail, code=exc.code, field=exc.field), headers)


async def _query_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, QueryError):
        raise exc
    position = exc.position if isinstance(exc, CqlError) else None
    body = ErrorPublic(detail=str(exc), code="invalid_query", field=exc.field, position=position)
    return _answer(status.HTTP_422_UNPROCESSABLE_CONTENT, body)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, RequestValidationError):
        raise exc
    errors = [
        FieldError(field=field_path(e.get("loc", ())), message=str(e.get("msg", ""))) for e in exc.errors()
    ]
    first = errors[0] if errors else FieldError(field="body", message="invalid request")
    body = ErrorPublic(
        detail=f"{first.field}: {first.message}", code="invalid_request", field=first.field, errors=errors
    )
    return _answer(status.HTTP_422_UNPROCESSABLE_CONTENT, body)


async def _registry_error(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, NotFoundError):
        return _answer(404, ErrorPublic(detail=str(exc), code=f"{exc.kind}_not_found"))
    if isinstance(exc, AlreadyExistsError):
        return _answer(409, ErrorPublic(detail=str(exc), code=f"{exc.kind}_exists", field="name"))
    if isinstance(exc, InUseError):
        return _answer(409, ErrorPublic(detail=str(exc), code=f"{exc.kind}_in_use"))
    return _answer(409, ErrorPublic(detail=str(exc), code="concurrent_change"))


async def _restoring(request: Request, exc: Exception) -> JSONResponse:
    body = ErrorPublic(detail=str(exc), code="registry_unavailable")
    return _answer(status.HTTP_503_SERVICE_UNAVAILABLE, body, {"Retry-After": "1"})


_PARSE_ERROR = "There was an error parsing the body"


async def _http_error(request: Request, exc: Exception) -> Response:
    """FastAPI's own answer, except a body Python cannot decode (a 5,000-digit number, JSON nested
    thousands deep), which FastAPI calls a 400: it is invalid input like any other, a 422."""
    if not isinstance(exc, HTTPException):
        raise exc
    if exc.status_code == status.HTTP_400_BAD_REQUEST and exc.detail == _PARSE_ERROR:
        cause = exc.__cause__
        reason = str(cause)[:200] if isinstance(cause, ValueError) else "nested too deep or too large"
        body = ErrorPublic(detail=f"body: not decodable JSON: {reason}", code="invalid_request", field="body")
        return _answer(status.HTTP_422_UNPROCESSABLE_CONTENT, body)
    return await http_exception_handler(request, exc)


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    _log.warning("%s %s: the registry is unreachable: %s", request.method, request.url.path, exc)
    body = ErrorPublic(detail="the registry (Redis) is unreachable; retry later", code="unavailable")
    return _answer(status.HTTP_503_SERVICE_UNAVAILABLE, body, {"Retry-After": "5"})


async def _out_path_error(request: Request, exc: Exception) -> JSONResponse:
    body = ErrorPublic(detail=str(exc), code="invalid_request", field="out")
    return _answer(status.HTTP_422_UNPROCESSABLE_CONTENT, body)


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers on `app`."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(QueryError, _query_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    for error in (NotFoundError, AlreadyExistsError, InUseError, ConcurrentChangeError):
        app.add_exception_handler(error, _registry_error)
    for unavailable in UNAVAILABLE_ERRORS:
        app.add_exception_handler(unavailable, _unavailable)
    app.add_exception_handler(OutPathError, _out_path_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RegistryUnavailableError, _restoring)
