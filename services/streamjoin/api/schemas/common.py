"""Shared pieces of the schemas: names, the error body."""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import BaseModel, Field, StrictBool, StrictFloat, StrictInt, StrictStr

__all__ = [
    "ErrorPublic",
    "FieldError",
    "Number",
    "QueryName",
    "Scalar",
    "StreamName",
    "TopicName",
]

StreamName = Annotated[
    StrictStr,
    Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", description="A stream name: a CQL identifier."),
]
QueryName = Annotated[
    StrictStr,
    Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$", description="A query name."),
]
TopicName = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9._-]{1,249}$", description="A Kafka topic name.")]
Number: TypeAlias = StrictInt | StrictFloat
Scalar: TypeAlias = StrictStr | StrictInt | StrictFloat | StrictBool | None


class FieldError(BaseModel):
    """One invalid field of a request."""

    field: str
    message: str


class ErrorPublic(BaseModel):
    """The body of every 4xx answer."""

    detail: str = Field(description="What is wrong, for a human.")
    code: str = Field(description="What is wrong, for a program (e.g. `invalid_query`, `query_not_found`).")
    field: str | None = Field(default=None, description="The offending field, e.g. `inputs[1].window.range`.")
    position: int | None = Field(default=None, description="For CQL: 0-based character offset of the error.")
    errors: list[FieldError] | None = Field(default=None, description="Every invalid field, when several.")

    def as_json(self) -> dict[str, Any]:
        """Return the body without absent fields."""
        return self.model_dump(exclude_none=True)
