"""Shared pieces of the schemas: names, the error body."""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import AfterValidator, BaseModel, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from streamjoin.names import FIELD_MAX, QUERY_PATTERN, STREAM_PATTERN, TOPIC_PATTERN, check_topic

__all__ = [
    "ErrorPublic",
    "FieldError",
    "FieldName",
    "Number",
    "QueryName",
    "Scalar",
    "StreamName",
    "TopicName",
]

# The rules are `streamjoin.names`', shared with the query parser and the topic catalog.
StreamName = Annotated[
    StrictStr, Field(pattern=STREAM_PATTERN, description="A stream name: a CQL identifier.")
]
QueryName = Annotated[StrictStr, Field(pattern=QUERY_PATTERN, description="A query name.")]
TopicName = Annotated[
    StrictStr,
    # checked by `check_topic` alone, so every refusal says what Kafka allows; the pattern documents it
    Field(json_schema_extra={"pattern": TOPIC_PATTERN}, description='A Kafka topic name (not "." or "..").'),
    AfterValidator(check_topic),
]
FieldName = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=FIELD_MAX,
        description=f"A field of the records (at most {FIELD_MAX} characters).",
    ),
]
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
