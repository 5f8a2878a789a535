"""Bearer-token authorisation: every write needs the token; reads in production mode (or if configured so).

Without a configured token (development mode only: production refuses to start, see
`config.check_api_settings`) writes are open, and a warning is logged at start-up. In production
mode, and with `STREAMJOIN_API_READ_TOKEN_REQUIRED`, reads need the token too, `/metrics` on the API
port included; `STREAMJOIN_METRICS_PORT` serves `/metrics` alone without one (`metrics_port`).
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from streamjoin.api.config import ApiSettings
from streamjoin.api.errors import ApiError

__all__ = ["READ_METHODS", "authorize", "bearer", "token_matches"]

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <STREAMJOIN_API_TOKEN>`")


def token_matches(settings: ApiSettings, given: str) -> bool:
    """Return whether `given` is the configured token (constant-time comparison)."""
    if settings.api_token is None:
        return False
    return hmac.compare_digest(given.encode(), settings.api_token.get_secret_value().encode())


def authorize(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> None:
    """Refuse the request unless its method is allowed without a token or it carries the right one.

    Raises `ApiError` 401 (no token) or 403 (wrong token).
    """
    settings: ApiSettings = request.app.state.settings
    token_set = settings.api_token is not None and bool(settings.api_token.get_secret_value())
    needed = token_set and (request.method not in READ_METHODS or settings.reads_need_token)
    if not needed:
        return
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise ApiError(401, "unauthorized", "a bearer token is required (Authorization: Bearer <token>)")
    if not token_matches(settings, credentials.credentials):
        raise ApiError(403, "forbidden", "the bearer token is not valid")
