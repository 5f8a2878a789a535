"""The error answers routes document in the OpenAPI document."""

from __future__ import annotations

from typing import Any

from streamjoin.api.schemas import ErrorPublic

__all__ = ["errors"]

_WHY = {
    401: "No bearer token.",
    403: "Wrong bearer token.",
    404: "No such entity.",
    409: "Duplicate name, in use, or changed concurrently.",
    422: "Invalid request; `field` names the problem.",
    429: "Too many pending registrations; retry after the `Retry-After` seconds.",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """Return the `responses=` entry for these status codes (401 and 403 always included)."""
    return {c: {"model": ErrorPublic, "description": _WHY[c]} for c in sorted({401, 403, *codes})}
