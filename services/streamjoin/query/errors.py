"""The error every query check raises: `QueryError`, naming the field where the problem is."""

from __future__ import annotations

__all__ = ["QueryError"]


class QueryError(ValueError):
    """A query that cannot be accepted; `field` names where the problem is."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
