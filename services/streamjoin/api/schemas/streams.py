"""Bodies of `/v1/streams`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

from streamjoin.api.limits import MAX_JSON_DEPTH, json_depth
from streamjoin.api.schemas.common import FieldName, StreamName, TopicName
from streamjoin.query.grammar import InputFormat

__all__ = ["StreamCreate", "StreamPublic"]


class StreamCreate(BaseModel):
    """Register a topic of JSON records as a named stream."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: StreamName
    topic: TopicName
    timestamp: FieldName | None = Field(
        default=None,
        description="The numeric timestamp field of the records; null: the Kafka record timestamp (ms).",
    )
    key: FieldName | None = Field(
        default=None,
        description="The field the topic is partitioned by (records with equal values in one partition, "
        "as Kafka's default partitioner places them with the value as record key); null: not keyed, "
        "and queries that join it re-key it (docs/partitioning.md).",
    )
    json_schema: dict[str, Any] | None = Field(
        default=None,
        alias="schema",
        description="Optional JSON Schema of the records; with `properties`, queries may name only those.",
    )
    description: StrictStr = Field(default="", max_length=1000)
    expected_rate: float | None = Field(
        default=None,
        gt=0,
        le=1e9,
        allow_inf_nan=False,
        description="Records per second expected on the topic (state-size estimate of its queries).",
    )
    record_bytes: int | None = Field(
        default=None, gt=0, le=1 << 30, description="Expected size of one record in bytes (same estimate)."
    )
    format: InputFormat = Field(
        default="json",
        description="`avro`: Confluent wire format (schema id, Avro); `schema` is an Avro record schema.",
    )

    @field_validator("json_schema")
    @classmethod
    def _plain_json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            if json_depth(value) > MAX_JSON_DEPTH:
                raise ValueError(f"must be nested at most {MAX_JSON_DEPTH} levels deep")
            try:
                text = json.dumps(value, allow_nan=False)
            except ValueError as exc:
                raise ValueError("must be plain JSON (no NaN or Infinity)") from exc
            if len(text) > 1_000_000:
                raise ValueError("must be at most 1 MB of JSON")
        return value


class StreamPublic(BaseModel):
    """A registered stream."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    name: str
    topic: str
    timestamp: str | None
    key: str | None = Field(
        default=None, description="The field the topic is partitioned by; null: not keyed."
    )
    json_schema: dict[str, Any] | None = Field(alias="schema")
    description: str
    created_at: float = Field(description="Unix seconds.")
    expected_rate: float | None = Field(default=None, description="Records per second expected.")
    record_bytes: int | None = Field(default=None, description="Expected size of one record in bytes.")
    format: InputFormat = Field(default="json", description="How record values are encoded.")
    queries: list[str] = Field(description="The registered queries that read this stream.")
