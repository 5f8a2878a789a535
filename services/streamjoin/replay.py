"""Replay a query over a JSONL file of events with the live engine (docs/queries.md, "Replay").

No Kafka, no Redis: each stream is one partition, a record's offset is its position in its stream,
and the records alone drive the watermark; the end of the file releases everything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from streamjoin.engine import MalformedRecord, RecordReader
from streamjoin.engine.ingest import loads_record
from streamjoin.operator import JoinOperator, OperatorFactory
from streamjoin.query import QueryDef, QueryError, parse_query
from streamjoin.query.text import expand_text, streams_from_json
from streamjoin.replay_sinks import Format, make_writer

__all__ = ["ReplayError", "load_query", "read_events", "replay"]

# Joining after every line would re-check the watermark per record; every few hundred lines keeps
# latency irrelevant (there is no wall time here) and the output identical.
_ADVANCE_EVERY = 512


class ReplayError(ValueError):
    """Bad query or bad events line; the message is the one line the CLI prints."""


_TEXT_FILES = {".sql": "sql", ".cql": "cql"}
"""Query files that hold the text alone, by suffix."""


def load_query(path: Path, streams_path: Path | None = None) -> QueryDef:
    """Read and validate a query file: query JSON (its inputs maybe as `sql` or `cql` text), SQL or CQL.

    A `.sql` or `.cql` file is the text alone: the query is named after the file, its output topic is
    `<name>.out`. Text names declared streams: `streams_path` is a JSON file of them, a list of
    `{"name", "topic", "timestamp"}` (as `POST /v1/streams` takes) or `{"name": {"topic", "timestamp"}}`.
    """
    try:
        text = path.read_text(encoding="utf-8")
        kind = _TEXT_FILES.get(path.suffix)
        raw = (
            {"name": path.stem, "output": {"topic": f"{path.stem}.out"}, kind: text}
            if kind
            else json.loads(text)
        )
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReplayError(f"{path}: cannot read query: {exc}") from None
    return _parse(raw, streams_path, str(path))


def query_from_cql(text: str, streams_path: Path) -> QueryDef:
    """Return the query of CQL `text` over the streams of `streams_path`, named "replay" (`--cql`)."""
    return _parse({"name": "replay", "output": {"topic": "replay.out"}, "cql": text}, streams_path, "--cql")


def _parse(raw: object, streams_path: Path | None, where: str) -> QueryDef:
    try:
        streams_raw = None if streams_path is None else json.loads(streams_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReplayError(f"{streams_path}: cannot read streams: {exc}") from None
    try:
        streams = None if streams_raw is None else streams_from_json(streams_raw)
        if isinstance(raw, dict):
            raw = expand_text(raw, streams)
        return parse_query(raw)
    except QueryError as exc:
        raise ReplayError(f"{where}: bad query: {exc}") from None


def read_events(
    query: QueryDef, lines: Iterable[str], watermark: Callable[[], float] | None = None
) -> Iterator[tuple[int, str, float, dict[str, Any], int]]:
    """Yield (line number, stream, timestamp, record, size) for each events line, validated.

    `watermark` returns the watermark as it stands: a record further ahead of it than the reader's
    `max_future` is malformed, as in the joiner.
    """
    reader = RecordReader(query)
    streams = set(query.stream_names)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = _loads(line)
        except MalformedRecord as exc:
            raise ReplayError(f"line {number}: {exc}") from None
        if not isinstance(event, dict) or "stream" not in event or "record" not in event:
            raise ReplayError(f'line {number}: expected {{"stream": ..., "record": {{...}}}}')
        stream = event["stream"]
        if stream not in streams:
            raise ReplayError(f"line {number}: unknown stream {stream!r}; the query reads {sorted(streams)}")
        kafka_ts = event.get("timestamp")
        try:
            horizon = reader.horizon(watermark()) if watermark is not None else math.inf
            ts, record = reader.read(stream, event["record"], kafka_ts, horizon)
        except MalformedRecord as exc:
            raise ReplayError(f"line {number}: malformed record of {stream!r}: {exc}") from None
        yield number, stream, ts, record, len(line)


# orjson reads an integer beyond 64 bits as a float: lines with 19 digits in a row take the slow path.
_LONG_DIGITS = re.compile(r"[0-9]{19}")


def _loads(line: str) -> Any:
    """Decode an events line with orjson (3x faster); the engine's reader decides what orjson refuses
    and lines that may hold integers beyond 64 bits."""
    if _LONG_DIGITS.search(line) is None:
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
    return loads_record(line)


def replay(
    query: QueryDef,
    lines: Iterable[str],
    out: IO[Any],
    *,
    on_line: Callable[[int], None] | None = None,
    operator: JoinOperator | None = None,
    output_format: Format = "envelope",
    count: bool = False,
) -> JoinOperator:
    """Run `query` over the events `lines`, writing one output line per result to `out`.

    `output_format`: the output record (`envelope`), flat rows (`flat`) or result ids (`ids`);
    `count`: only the number of results, one line at the end.
    """
    operator = operator or OperatorFactory(query).build()
    writer = make_writer(query, out, output_format, count=count)
    write, piece, add = writer.write, writer.piece, operator.add
    offsets = dict.fromkeys(query.stream_names, 0)
    index = {name: i for i, name in enumerate(query.stream_names)}
    engine = operator.engine
    for number, stream, ts, record, size in read_events(query, lines, lambda: engine.watermark):
        offset = offsets[stream]
        offsets[stream] = offset + 1
        add(stream, record, ts=ts, offset=offset, size=size, extra=piece(index[stream], offset, record))
        if number % _ADVANCE_EVERY == 0:
            write(operator.advance())
            if on_line is not None:
                on_line(number)
    write(operator.advance())
    write(operator.finish())
    writer.close()
    return operator
