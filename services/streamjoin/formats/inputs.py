"""Avro inputs as the engine reads them: the one decoder the joiner and the back-fill share.

An Avro topic's `decode` reads the framed record by its schema id (`AvroReader`: schemas fetched
from the registry once per id and process) and validates it with the query's `RecordReader`; its
`piece` gives the `ResultFormatter` the record re-encoded as JSON, so results splice exactly as for
JSON inputs and the output record is the same wherever the record was joined (docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamjoin.engine import MalformedRecord, RecordReader, ResultFormatter
from streamjoin.engine.output import Piece, encode_json
from streamjoin.formats.avro import AvroReader, UndecodableRecord
from streamjoin.query.model import QueryDef
from streamjoin.schema_registry import RegistryUnavailable, SchemaRegistry

__all__ = ["AvroInput", "avro_inputs", "need_registry"]


class _NoRegistry:
    """The registry of a process configured without one: every call fails the attempt, with why."""

    def __init__(self, query: QueryDef) -> None:
        self._why = f"query {query.name!r} reads or writes Avro: set STREAMJOIN_SCHEMA_REGISTRY_URL"

    def register(self, subject: str, schema: Mapping[str, Any]) -> int:
        raise RegistryUnavailable(self._why)

    def schema(self, schema_id: int) -> Mapping[str, Any]:
        raise RegistryUnavailable(self._why)

    def latest(self, subject: str) -> tuple[int, Mapping[str, Any]]:
        raise RegistryUnavailable(self._why)


def need_registry(registry: SchemaRegistry | None, query: QueryDef) -> SchemaRegistry:
    """Return `registry`, or one whose every call raises `RegistryUnavailable` naming the setting."""
    return registry if registry is not None else _NoRegistry(query)


class AvroInput:
    """Decode an Avro topic's records; `piece` gives the formatter the record as JSON."""

    def __init__(self, reader: AvroReader, records: RecordReader, formatter: ResultFormatter) -> None:
        self._avro = reader
        self._records = records
        self._piece = formatter.piece
        self._json = b""  # the JSON of the record `decode` returned last, for `piece`

    def decode(
        self, stream: str, raw: bytes | None, kafka_ts: float | None, horizon: float
    ) -> tuple[float, dict[str, Any]]:
        """Return (timestamp, record) of framed Avro record `raw` of input `stream`.

        Raises:
            MalformedRecord: not framed, an unknown schema id, a body that does not match its
                schema, a value with no JSON form, or a record the query's reader refuses.
            RegistryUnavailable: the registry cannot tell now (retry later, refuse nothing).
        """
        try:
            value = self._avro.read(raw)
            self._json = encode_json(value)
        except UndecodableRecord as exc:
            raise MalformedRecord(str(exc)) from None
        except TypeError as exc:  # bytes or fixed fields have no JSON form
            raise MalformedRecord(f"Avro record not representable as JSON: {exc}") from None
        return self._records.read(stream, value, kafka_ts, horizon)

    def piece(self, input: int, partition: int, offset: int, raw: bytes, record: Mapping[str, Any]) -> Piece:
        """Return `ResultFormatter.piece` of the record `decode` returned last, as its JSON."""
        return self._piece(input, partition, offset, self._json, record)


def avro_inputs(
    query: QueryDef, records: RecordReader, formatter: ResultFormatter, registry: SchemaRegistry | None
) -> dict[str, AvroInput]:
    """Return the `AvroInput` of each Avro input topic of `query` (one schema cache for all)."""
    inputs: dict[str, AvroInput] = {}
    reader: AvroReader | None = None
    for inp in query.inputs:
        if inp.format == "avro":
            reader = reader or AvroReader(need_registry(registry, query))
            inputs[inp.topic] = AvroInput(reader, records, formatter)
    return inputs
