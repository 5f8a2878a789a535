"""Bodies of `/v1/queries`: the query JSON (docs/api.md), or CQL text.

Every name a query may write (modes, algorithms, formats, policies, start positions) is the
`Literal` declared in `streamjoin.query.grammar`, so the OpenAPI enums are the names `parse_query`
accepts (`tests/api/test_grammar_schema.py`); `parse_query` still validates everything these leave
open.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from streamjoin.api.schemas.common import FieldName, Number, QueryName, Scalar, TopicName
from streamjoin.query.grammar import (
    Algorithm,
    AutoOrder,
    CombineName,
    ExpirationMode,
    InputFormat,
    Mode,
    OutputFormat,
    PolicyName,
    StartName,
)
from streamjoin.registry import PartitionState, QueryControls, QueryStatus

__all__ = [
    "ControlsPublic",
    "ExpirationSpec",
    "InputSpec",
    "ModeSpec",
    "OutputSpec",
    "PartitionStatusPublic",
    "QueryCreate",
    "QueryPublic",
    "QueryUpdate",
    "StatusReasonPublic",
    "WindowSpec",
]

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class WindowSpec(BaseModel):
    """`{"range": T}`, `{"range": T, "strict": true}`, `{"rows": N}`, `{"rows": N, "partition_by": "f"}`."""

    model_config = _STRICT

    range: Number | None = Field(default=None, description="Time window: the last T timestamp units.")
    rows: Number | None = Field(default=None, description="Count window: the last N records per partition.")
    partition_by: FieldName | None = Field(default=None, description="Count per value of this field.")
    strict: bool | None = Field(default=None, description="Range windows: exclusive bound `t_max - ts < T`.")


class InputSpec(BaseModel):
    """One input: a registered stream and its window (none if `within` pairs bound it); topic and
    timestamp default to the stream's."""

    model_config = _STRICT

    stream: StrictStr
    topic: TopicName | None = None
    timestamp: FieldName | None = None
    key: FieldName | None = Field(default=None, description="Defaults to the stream's; it may not differ.")
    window: WindowSpec | None = None
    format: InputFormat | None = Field(default=None, description="The stream's; given, it must match.")


class ModeSpec(BaseModel):
    """Evaluation or expiration mode: `{"mode": "eager"}` or `{"mode": "lazy", "every": tau}`."""

    model_config = _STRICT

    mode: Mode = "eager"
    every: Number | None = None


class ExpirationSpec(BaseModel):
    """Expiration: `eager`, `lazy` (with `every`), or a scope: `probe`, `probe_insert`, `probe_all`."""

    model_config = _STRICT

    mode: ExpirationMode = "eager"
    every: Number | None = None


class SheddingSpec(BaseModel):
    """Load shedding under a memory budget with importance (docs/shedding.md); the parser checks the rest."""

    model_config = _STRICT

    memory: StrictInt = Field(description="The most records the windows hold together (split evenly).")
    policy: PolicyName
    importance: FieldName | None = Field(
        default=None, description="The field holding each record's importance."
    )
    combine: CombineName = "min"
    seed: StrictInt = 0


class OutputSpec(BaseModel):
    """Where results (or dead letters) go."""

    model_config = _STRICT

    topic: TopicName


class ResultsSpec(OutputSpec):
    """Where results go, and their format (docs/formats.md)."""

    format: OutputFormat | None = Field(
        default=None, description="`envelope` (default), `flat` rows, or flat rows in `avro`."
    )
    schema_: dict[str, Any] | None = Field(
        default=None,
        alias="schema",
        description="The Avro record schema of `avro` rows; derived from the inputs' schemas when omitted.",
    )


class QueryCreate(BaseModel):
    """Register a query: the query JSON (`inputs`, `where`, ...) or `cql` text over registered streams."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={
            "examples": [
                {
                    "name": "flows",
                    "cql": "SELECT * FROM a [RANGE 100], b [ROWS 50] WHERE a.src = b.src",
                    "output": {"topic": "flows.out"},
                }
            ]
        },
    )

    name: QueryName
    cql: StrictStr | None = Field(default=None, description="CQL text; replaces inputs, where and select.")
    sql: StrictStr | None = Field(
        default=None,
        description="SQL text (JOIN ... ON, aliases, OR, arithmetic, ...) with CQL's window clauses; "
        "replaces inputs, where, filter, select, columns, within and shedding.",
    )
    inputs: list[InputSpec] | None = None
    where: list[list[Scalar]] | None = Field(default=None, description='`[["a.src", "=", "b.src"], ...]`')
    select: list[StrictStr] | None = None
    columns: list[Any] | None = Field(
        default=None,
        description='The select list as rows: `[{"name": "gross", "expr": {"op": "*", "args": '
        '[{"ref": ["o", "amount"]}, 1.2]}}, {"star": "p"}]`.',
    )
    filter: Any = Field(
        default=None, description='The filter expression: `{"op": ">", "args": [{"ref": ["a", "n"]}, 1]}`.'
    )
    output: ResultsSpec
    evaluation: ModeSpec | None = None
    expiration: ExpirationSpec | None = None
    within: list[tuple[StrictStr, StrictStr, Number]] | None = Field(
        default=None,
        description='W-join pairs `[["a", "b", w], ...]`: `|ts(a) - ts(b)| <= w` in every result.',
    )
    shedding: SheddingSpec | None = None
    algorithm: Algorithm | None = None
    order: AutoOrder | list[StrictStr] | None = None
    lateness: Number | None = None
    start: StartName | Number | None = None
    dead_letter: OutputSpec | None = None
    paused: bool = Field(default=False, description="Register the query paused.")

    def query_json(self) -> dict[str, Any]:
        """Return the query JSON fields the client gave (without `cql`, `sql` and `paused`).

        A null reads as "not given" (the default applies), except an input's `timestamp`, where
        null means the Kafka record timestamp.
        """
        out = self.model_dump(exclude_unset=True, exclude_none=True, exclude={"cql", "sql", "paused"})
        for given, dumped in zip(self.inputs or (), out.get("inputs", ()), strict=True):
            if "timestamp" in given.model_fields_set:
                dumped["timestamp"] = given.timestamp
        if "within" in out:
            out["within"] = [list(pair) for pair in out["within"]]
        if "schema_" in out.get("output", {}):
            out["output"]["schema"] = out["output"].pop("schema_")
        return out


class QueryUpdate(QueryCreate):
    """Replace a query's definition (PUT): the same body as `QueryCreate`; `name` may be omitted."""

    name: QueryName | None = None  # type: ignore[assignment]  # optional here, the path names the query


class ControlsPublic(BaseModel):
    """The writable Control-Table attributes of a query, as in force (`QueryControls.as_json()`)."""

    evaluation: dict[str, Any]
    expiration: dict[str, Any]
    order: AutoOrder | list[str]
    paused: bool
    shedding_memory: int | None = Field(
        default=None, description="The `shedding` budget in force (records); null without shedding."
    )

    @classmethod
    def of(cls, controls: QueryControls) -> ControlsPublic:
        """Return the public form of `controls`: their one JSON form."""
        return cls.model_validate(controls.as_json())


class PartitionStatusPublic(BaseModel):
    """Where one partition of a query stands, as its worker reported."""

    partition: int
    worker: str
    state: PartitionState
    at: float
    version: int | None = Field(description="The registry version the worker had applied.")
    error: str | None = Field(default=None, description="Why the partition is failing (state `failing`).")
    error_since: float | None = Field(default=None, description="When the error was first seen (unix s).")


class StatusReasonPublic(BaseModel):
    """Why a query is not running: the error a worker reported (or the partitions nobody runs)."""

    error: str
    since: float | None = Field(description="When it was first seen (unix s), if known.")
    partition: int | None = Field(description="The partition concerned; null: the query as a whole.")


class QueryPublic(BaseModel):
    """A registered query with its status."""

    name: str
    status: QueryStatus
    source: Literal["json", "cql"] = Field(description="How the query was registered.")
    cql: str = Field(description="The CQL text given, or the CQL form of the JSON definition.")
    definition: dict[str, Any] = Field(description="The normalised query JSON (every default spelled out).")
    controls: ControlsPublic
    reason: StatusReasonPublic | None = Field(
        default=None, description="Why the query is not running (null while it runs or is paused)."
    )
    partitions: list[PartitionStatusPublic]
    partitioning: dict[str, Any] | None = Field(
        default=None,
        description="How the inputs reach the operator partitions (read directly or re-keyed, and why), "
        "as in `/plan`; null until a joiner published it.",
    )
    revision: int = Field(description="1 when registered, +1 for each replaced definition.")
    created_at: float
    updated_at: float
    registry_version: int = Field(description="The registry version this answer reflects.")


class QueryValidation(BaseModel):
    """A query that would register: the same compile step as `POST /v1/queries`, nothing stored."""

    valid: Literal[True] = True
    name: str
    cql: str = Field(description="The CQL form of the query.")
    definition: dict[str, Any] = Field(description="The normalised query JSON it would register.")
    streams: list[str] = Field(description="The registered streams it reads.")
    exists: bool = Field(description="Whether a query of this name is registered (registering would be 409).")
