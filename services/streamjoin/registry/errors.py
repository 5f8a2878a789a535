"""Errors of the registry: what a caller (the control plane, a joiner) can act on."""

from __future__ import annotations

from collections.abc import Sequence

from redis.exceptions import ConnectionError as _RedisConnectionError
from redis.exceptions import TimeoutError as _RedisTimeoutError

__all__ = [
    "AlreadyExistsError",
    "ConcurrentChangeError",
    "InUseError",
    "NotFoundError",
    "UNAVAILABLE_ERRORS",
    "RegistryError",
    "RegistryUnavailableError",
]


class RegistryError(Exception):
    """A registry operation that cannot be carried out; nothing was written."""


class NotFoundError(RegistryError):
    """The stream or query named does not exist."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f"no {kind} named {name!r}")
        self.kind = kind
        self.name = name


class AlreadyExistsError(RegistryError):
    """A stream or query with this name is already registered."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f"a {kind} named {name!r} already exists")
        self.kind = kind
        self.name = name


class InUseError(RegistryError):
    """The stream cannot be removed: registered queries read it."""

    def __init__(self, kind: str, name: str, users: Sequence[str]) -> None:
        super().__init__(f"the {kind} {name!r} is used by {sorted(users)}")
        self.kind = kind
        self.name = name
        self.users = tuple(sorted(users))


class ConcurrentChangeError(RegistryError):
    """The registry kept changing under a write (or a checked record changed); retry the request."""


UNAVAILABLE_ERRORS: tuple[type[Exception], ...] = (
    _RedisConnectionError,
    _RedisTimeoutError,
    ConnectionError,
    TimeoutError,
)
"""What a registry call raises when Redis cannot be reached: the caller may retry later (HTTP 503)."""


class RegistryUnavailableError(RegistryError):
    """The registry cannot answer now: Redis lost it and it is being restored from its log, or the log
    did not acknowledge a write. Nothing was written to Redis; retry later (HTTP 503)."""
