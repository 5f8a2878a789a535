"""Record formats of an operator, chosen once per operator (docs/formats.md).

Inputs: each topic gets a (decode, piece) pair. A JSON topic keeps the batch builder's own pair
untouched; an Avro topic's is `formats.inputs.AvroInput`'s (shared with the back-fill): decode reads
the framed record by its schema id and piece carries the record re-encoded as JSON, so results
splice, checkpoints and recovery work as for JSON inputs. Outputs: the envelope (the builder's own
encoder), flat rows in JSON, or flat rows in Avro under the output topic's subject.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from streamjoin.engine import RecordReader, ResultFormatter
from streamjoin.engine.entry import Entry
from streamjoin.engine.output import Piece, encode_json
from streamjoin.engine.schedule import EmitterRun
from streamjoin.formats import AvroWriter
from streamjoin.formats.inputs import avro_inputs, need_registry
from streamjoin.joiner.publish.outbox import OutboxRecord
from streamjoin.query.model import QueryDef
from streamjoin.schema_registry import SchemaRegistry, registry_at, subject_of

__all__ = [
    "Decode",
    "Envelope",
    "MakePiece",
    "OutputEncoder",
    "input_codecs",
    "output_encoder",
    "registry_at",
]

Decode = Callable[[str, bytes | None, float, float], tuple[float, dict[str, Any]]]
"""`(stream, raw value, Kafka timestamp, horizon) -> (ts, record)`; raises `MalformedRecord`."""
Envelope = Callable[[list[Any], Sequence[EmitterRun]], Sequence[OutboxRecord]]
"""The batch builder's own encoder of the envelope: `(results, runs) -> records`."""
MakePiece = Callable[[int, int, int, bytes, Mapping[str, Any]], Piece]
"""`ResultFormatter.piece`'s signature: `(input, partition, offset, raw, record) -> Piece`."""


class OutputEncoder(Protocol):
    """How an operator writes its results."""

    def __call__(
        self, results: list[Any], dead: list[OutboxRecord], runs: Sequence[EmitterRun] = ()
    ) -> Sequence[OutboxRecord]:
        """Return the output records of `results` (lists of entries), one per result left in it: a
        result it cannot encode is taken out of `results` (in place) and joins `dead`. `runs`: the
        engine's runs of results emitted by one entry (`MultiJoin.result_runs`)."""
        ...

    def prefix(self) -> bytes:
        """Return how every output record of the query starts (exactly-once recovery counts the
        records of an exclusive output partition by it: `kafka_io.highest_published`)."""
        ...


def input_codecs(
    query: QueryDef,
    json_codec: tuple[Decode, MakePiece],
    records: RecordReader,
    formatter: ResultFormatter,
    registry: SchemaRegistry | None,
) -> dict[str, tuple[Decode, MakePiece]]:
    """Return the (decode, piece) pair of each input topic (`json_codec` for JSON topics)."""
    codecs: dict[str, tuple[Decode, MakePiece]] = {inp.topic: json_codec for inp in query.inputs}
    for topic, avro in avro_inputs(query, records, formatter, registry).items():
        codecs[topic] = (avro.decode, avro.piece)
    return codecs


class _FlatOutput:
    """Flat rows as JSON: `{"query", "ts", "id", "<stream>_<field>": ...}`."""

    def __init__(self, formatter: ResultFormatter) -> None:
        self._formatter = formatter

    def prefix(self) -> bytes:
        return self._formatter.prefix  # `query` is the row's first field, as in the envelope

    def __call__(
        self, results: list[Any], dead: list[OutboxRecord], runs: Sequence[EmitterRun] = ()
    ) -> list[OutboxRecord]:
        fmt = self._formatter
        return [OutboxRecord(fmt.key(r), encode_json(fmt.flat(r))) for r in results]


class _AvroOutput:
    """Flat rows in Avro, framed with the id of the query's schema under `<output topic>-value`."""

    def __init__(self, query: QueryDef, formatter: ResultFormatter, registry: SchemaRegistry) -> None:
        if query.output_schema is None:
            raise ValueError(f"query {query.name!r} has Avro output but no output schema")
        self._query = query
        self._schema = json.loads(query.output_schema)
        self._formatter = formatter
        self._registry = registry
        self._writer: AvroWriter | None = None

    def writer(self) -> AvroWriter:
        """Return the writer, registering the schema first (once, on the first batch with results)."""
        if self._writer is None:
            schema_id = self._registry.register(subject_of(self._query.output_topic), self._schema)
            self._writer = AvroWriter(self._schema, schema_id)
        return self._writer

    def prefix(self) -> bytes:
        return self.writer().write_prefix({"query": self._query.name})

    def __call__(
        self, results: list[Any], dead: list[OutboxRecord], runs: Sequence[EmitterRun] = ()
    ) -> list[OutboxRecord]:
        if not results:
            return []
        write, fmt = self.writer().write, self._formatter
        records: list[OutboxRecord] = []
        refused: list[int] = []
        for i, r in enumerate(results):
            try:
                records.append(OutboxRecord(fmt.key(r), write(fmt.flat(r))))
            except ValueError as exc:
                dead.append(self._dead_letter(r, str(exc)))
                refused.append(i)
        for i in reversed(refused):  # records and results stay aligned (`BatchBuilder._fit`)
            del results[i]
        return records

    def _dead_letter(self, result: Sequence[Entry], reason: str) -> OutboxRecord:
        """Return the result as its JSON envelope, with the reason: nothing is lost."""
        fmt = self._formatter
        headers = (
            ("reason", reason.encode()),
            ("query", self._query.name.encode()),
            ("result-id", fmt.result_id(result).encode()),
        )
        return OutboxRecord(fmt.key(result), fmt.encode(result), headers)


class _Envelope:
    """The envelope: the batch builder's own encoder (spliced, or JSON-encoded with `select`)."""

    def __init__(self, formatter: ResultFormatter, envelope: Envelope) -> None:
        self._prefix = formatter.prefix
        self._envelope = envelope

    def prefix(self) -> bytes:
        return self._prefix

    def __call__(
        self, results: list[Any], dead: list[OutboxRecord], runs: Sequence[EmitterRun] = ()
    ) -> Sequence[OutboxRecord]:
        return self._envelope(results, runs)


def output_encoder(
    query: QueryDef,
    formatter: ResultFormatter,
    envelope: Envelope,
    registry: SchemaRegistry | None,
) -> OutputEncoder:
    """Return the encoder of the query's output format (`envelope`: the builder's own)."""
    if query.output_format == "flat":
        return _FlatOutput(formatter)
    if query.output_format == "avro":
        return _AvroOutput(query, formatter, need_registry(registry, query))

    return _Envelope(formatter, envelope)
