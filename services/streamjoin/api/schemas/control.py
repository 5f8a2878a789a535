"""Bodies of `/v1/control`: STREAM's Control Tables, one per entity."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator
from pydantic.json_schema import SkipJsonSchema

from streamjoin.api.schemas.queries import ExpirationSpec, ModeSpec
from streamjoin.query.grammar import AutoOrder

__all__ = ["REMOVED_MEMORY_BUDGET", "ControlTable", "ControlUpdate", "EntityKind"]

REMOVED_MEMORY_BUDGET = (
    "memory_budget_bytes was removed: it was stored but never limited a query's memory "
    "(see docs/api.md, Control Tables)"
)

EntityKind: TypeAlias = Literal["queries", "windows", "operators", "topics"]


class ControlTable(BaseModel):
    """An entity's attribute-value pairs: statistics, and the controls a user may write."""

    entity: Literal["query", "window", "operator", "topic"]
    name: str = Field(description="query name; `query.stream` for a window; topic name for a topic.")
    attributes: dict[str, Any]
    writable: list[str] = Field(description="The attributes `PATCH /v1/control/queries/{name}` accepts.")


class ControlUpdate(BaseModel):
    """Write Control-Table attributes of a query; only the fields given change."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    evaluation: ModeSpec | None = None
    expiration: ExpirationSpec | None = None
    order: AutoOrder | list[StrictStr] | None = None
    paused: StrictBool | None = None
    shedding_memory: StrictInt | None = Field(
        default=None, description="The `shedding` budget (records over every window), from the next batch on."
    )
    memory_budget_bytes: SkipJsonSchema[object] = Field(default=None, exclude=True)
    """Removed (it never reached an engine): given at all, the request is a 422 that says so."""

    @field_validator("memory_budget_bytes")
    @classmethod
    def _removed(cls, value: object) -> object:
        raise ValueError(REMOVED_MEMORY_BUDGET)
