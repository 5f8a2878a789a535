"""How the back-fill reads each input's archived values: JSON, or Avro as the joiner reads it.

The archive holds every record's raw value. A JSON input is read by the engine's `RecordReader`;
an Avro input (Confluent wire format) by `formats.inputs.AvroInput`, the joiner's own decoder, with
its schemas fetched by id from the registry once per process (`registry_at`). No Spark here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streamjoin.engine import MalformedRecord, RecordReader, ResultFormatter
from streamjoin.engine.output import Piece
from streamjoin.formats.inputs import avro_inputs
from streamjoin.query.model import QueryDef
from streamjoin.schema_registry import SchemaRegistry, registry_at

__all__ = [
    "Codec",
    "Decode",
    "MakePiece",
    "avro_streams",
    "decoder_of",
    "input_codecs",
    "need_envelope_for_topic",
    "need_registry_url",
    "timestamps",
]

Decode = Callable[[str, bytes | None, float | None, float], tuple[float, dict[str, Any]]]
"""`(stream, raw value, Kafka timestamp or None, horizon) -> (ts, record)`; raises `MalformedRecord`."""
MakePiece = Callable[[int, int, int, bytes, Mapping[str, Any]], Piece]
"""`ResultFormatter.piece`'s signature: `(input, partition, offset, raw, record) -> Piece`."""
Codec = tuple[Decode, MakePiece]


def avro_streams(query: QueryDef) -> list[str]:
    """Return the streams of `query` whose topic is in Avro."""
    return [inp.stream for inp in query.inputs if inp.format == "avro"]


def need_registry_url(query: QueryDef, url: str | None) -> None:
    """Raise ValueError naming the Avro inputs when `query` has some and no registry URL is set."""
    streams = avro_streams(query)
    if streams and not url:
        raise ValueError(
            f"query {query.name!r} reads Avro input(s) {', '.join(streams)}: the back-fill decodes them "
            "with the schema registry; set STREAMJOIN_SCHEMA_REGISTRY_URL"
        )


def need_envelope_for_topic(query: QueryDef, out: str | None) -> None:
    """Raise ValueError when the results would go to the query's output topic (`out` None) in the
    JSON envelope while the live joiner writes it as `flat` or `avro` rows: one topic, two shapes."""
    if out is None and query.output_format != "envelope":
        raise ValueError(
            f"query {query.name!r} writes {query.output_format!r} output records; the back-fill writes "
            "the JSON envelope only, so it cannot write to the query's output topic yet: pass --out "
            '(REST: "out") to write Parquet files instead'
        )


def input_codecs(
    query: QueryDef,
    reader: RecordReader,
    formatter: ResultFormatter,
    registry: SchemaRegistry | None = None,
    registry_url: str | None = None,
) -> list[Codec]:
    """Return each input's (decode, piece), by input index: `registry`, else the one at `registry_url`."""
    schemas = registry if registry is not None else registry_at(registry_url)
    avro = avro_inputs(query, reader, formatter, schemas)
    codecs: list[Codec] = []
    for inp in query.inputs:
        codec = avro.get(inp.topic)
        codecs.append((codec.decode, codec.piece) if codec is not None else (reader.decode, formatter.piece))
    return codecs


def decoder_of(query: QueryDef, index: int, registry_url: str | None) -> Decode:
    """Return the decode of input `index` (its own reader, and schema cache for an Avro input)."""
    return input_codecs(query, RecordReader(query), ResultFormatter(query), registry_url=registry_url)[index][
        0
    ]


def timestamps(
    decode: Decode, stream: str, values: Sequence[bytes | None], kafka_ts: Sequence[Any]
) -> list[float | None]:
    """Return the timestamp the engine reads from each value (None where it refuses the record)."""
    out: list[float | None] = []
    for value, kts in zip(values, kafka_ts, strict=True):
        kafka = None if kts is None or kts != kts else int(kts)  # None or NaN
        try:
            ts = decode(stream, value, kafka, math.inf)[0]
        except MalformedRecord:
            out.append(None)
            continue
        out.append(float(ts))
    return out
