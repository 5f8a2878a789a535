"""Refuse before parsing: the token of a write is checked, and its body's size capped, first.

A pure ASGI middleware (no body is read for a refused request): a write without the right token is
answered 401/403 before a byte of its body is read, so invalid JSON without a token is a 401 and a
300 MB body without a token costs nothing; a body over `api_max_body_bytes` is answered 413 as soon
as its `Content-Length` (or, when chunked, its running size) says so. `json_depth` bounds the nesting
of user JSON (stream schemas) that is stored and served again.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from streamjoin.api.config import ApiSettings

__all__ = ["MAX_JSON_DEPTH", "RequestGuard", "json_depth"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_JSON_DEPTH = 32
"""The deepest nesting of a stored JSON document (a stream's schema) the API accepts."""

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def json_depth(value: Any) -> int:
    """Return the nesting depth of a decoded JSON value (a scalar is 0), without recursion.

    >>> json_depth({"a": [1, {"b": 2}]}), json_depth(3), json_depth([])
    (3, 0, 1)
    """
    depth = 0
    level: list[Any] = [value]
    while True:
        children: list[Any] = []
        containers = 0
        for item in level:
            if isinstance(item, dict):
                children.extend(item.values())
                containers += 1
            elif isinstance(item, list):
                children.extend(item)
                containers += 1
        if not containers:
            return depth
        depth += 1
        level = children


class RequestGuard:
    """Check a write's bearer token, then cap its body, before the app reads it."""

    def __init__(self, app: App, settings: ApiSettings) -> None:
        self.app = app
        self._settings = settings
        self._limit = settings.api_max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request, refusing it early when it must be refused."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        refusal = self._check_token(scope["method"], headers.get("authorization"))
        if refusal is None:
            refusal = self._check_length(headers.get("content-length"))
        if refusal is not None:
            await _answer(send, *refusal)
            return
        if scope["method"] in _READ_METHODS:
            await self.app(scope, receive, send)
            return
        # Read the body (bounded) before the app does, and hand it over whole.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._limit:
                await _answer(send, *self._too_large())
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        handed = False

        async def replay() -> Message:
            nonlocal handed
            if not handed:
                handed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _check_token(self, method: str, authorization: str | None) -> tuple[int, str, str] | None:
        token = self._settings.api_token.get_secret_value() if self._settings.api_token is not None else ""
        if not token or method in _READ_METHODS:
            return None  # reads are checked by the routes' dependency (`security.authorize`)
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            return 401, "unauthorized", "a bearer token is required (Authorization: Bearer <token>)"
        if not hmac.compare_digest(given.strip().encode(), token.encode()):
            return 403, "forbidden", "the bearer token is not valid"
        return None

    def _check_length(self, length: str | None) -> tuple[int, str, str] | None:
        if length is None:
            return None
        if not length.isascii() or not length.isdigit():
            return 400, "invalid_request", "Content-Length is not a number"
        if int(length) > self._limit:
            return self._too_large()
        return None

    def _too_large(self) -> tuple[int, str, str]:
        return (
            413,
            "body_too_large",
            f"the body is larger than {self._limit} bytes (STREAMJOIN_API_MAX_BODY_BYTES)",
        )


async def _answer(send: Send, status: int, code: str, detail: str) -> None:
    body = json.dumps({"detail": detail, "code": code}).encode()  # `ErrorPublic`'s shape
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
