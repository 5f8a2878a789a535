"""Replay a query over a JSONL file of events with the live engine (docs/queries.md, "Replay").

No Kafka, no Redis: each stream is one partition, a record's offset is its position in its stream,
and the records alone drive the watermark; the end of the file releases everything.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, TextIO

from streamjoin.engine import MalformedRecord, RecordReader
from streamjoin.engine.fastjson import loads_json
from streamjoin.operator import JoinOperator, OperatorFactory
from streamjoin.query import QueryDef
from streamjoin.replay_sinks import Format, make_writer

__all__ = ["DeadLetter", "DeadLetterLog", "ReplayError", "read_events", "replay"]

# Joining after every line would re-check the watermark per record; every few hundred lines keeps
# latency irrelevant (there is no wall time here) and the output identical.
_ADVANCE_EVERY = 512


class ReplayError(ValueError):
    """A bad events line; the message is the one line the CLI prints."""


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record of the events file the query cannot use, and why: the joiner dead-letters it."""

    line: int
    stream: str
    reason: str
    event: str
    """The events line as read (it may hold `NaN`, so it is kept as text)."""

    @property
    def message(self) -> str:
        """Return the report, e.g. `line 3: malformed record of 'c': missing timestamp field 'ts'`."""
        return f"line {self.line}: malformed record of {self.stream!r}: {self.reason}"

    def as_json(self) -> str:
        """Return the dead letter as one JSON line: line, stream, reason and the events line."""
        fields = {"line": self.line, "stream": self.stream, "reason": self.reason, "event": self.event}
        return json.dumps(fields, separators=(",", ":"))


class DeadLetterLog:
    """Count malformed records, report each on `err` and write it to `letters` (JSONL) if given."""

    def __init__(
        self, err: TextIO, letters: TextIO | None = None, prefix: str = "streamjoin replay: "
    ) -> None:
        self.err = err
        self.letters = letters
        self.prefix = prefix
        self.count = 0

    def __call__(self, letter: DeadLetter) -> None:
        """Record one malformed record (the replay goes on)."""
        self.count += 1
        print(f"{self.prefix}{letter.message} (skipped)", file=self.err)
        if self.letters is not None:
            self.letters.write(letter.as_json() + "\n")


def read_events(
    query: QueryDef,
    lines: Iterable[str],
    bounded: bool = False,
    on_malformed: Callable[[DeadLetter], None] | None = None,
) -> Iterator[tuple[int, str, float, dict[str, Any], int]]:
    """Yield (line number, stream, timestamp, record, size) for each events line, validated.

    A line that is not `{"stream": ..., "record": ...}` of a stream of the query is a bad events file:
    ReplayError. A record the query cannot use (the rules of the joiner's `RecordReader`, `NaN` and
    overflowing numbers included) is given to `on_malformed` and skipped, as the joiner dead-letters
    it; without `on_malformed` it is a ReplayError. `bounded`: a record further ahead of the newest
    timestamp its input has shown than the reader's `max_future` is malformed, as in the joiner.
    """
    reader = RecordReader(query)
    streams = set(query.stream_names)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            stream, record, kafka_ts = _envelope(line, number, streams)
            horizon = reader.horizon(stream) if bounded else math.inf
            ts, value = reader.read(stream, record, kafka_ts, horizon)
            reader.shown(stream, 0, ts)
        except MalformedRecord as exc:
            where = exc.stream if isinstance(exc, _PoisonLine) else stream
            letter = DeadLetter(number, where, str(exc), line.rstrip("\r\n"))
            if on_malformed is None:
                raise ReplayError(letter.message) from None
            on_malformed(letter)
            continue
        yield number, stream, ts, value, len(line)


class _PoisonLine(MalformedRecord):
    """A well-formed events line whose record is not strict JSON (`NaN`, an overflowing number)."""

    def __init__(self, stream: str, reason: str) -> None:
        super().__init__(reason)
        self.stream = stream


def _envelope(line: str, number: int, streams: set[str]) -> tuple[str, Any, Any]:
    """Return (stream, record, Kafka timestamp) of an events line; ReplayError if the line is bad."""
    try:
        event = loads_json(line)
        poison = None
    except MalformedRecord as exc:
        try:  # Python's lenient JSON: an envelope holding a poison number is a malformed record
            event = json.loads(line)
        except (json.JSONDecodeError, ValueError, RecursionError):
            raise ReplayError(f"line {number}: {exc}") from None
        poison = str(exc)
    if not isinstance(event, dict) or "stream" not in event or "record" not in event:
        raise ReplayError(f'line {number}: expected {{"stream": ..., "record": {{...}}}}')
    stream = event["stream"]
    if not isinstance(stream, str) or stream not in streams:
        raise ReplayError(f"line {number}: unknown stream {stream!r}; the query reads {sorted(streams)}")
    kafka_ts = event.get("timestamp")
    if kafka_ts is not None and (type(kafka_ts) not in (int, float) or not math.isfinite(kafka_ts)):
        raise ReplayError(f'line {number}: "timestamp" (the Kafka timestamp) must be a finite number')
    if poison is not None:
        raise _PoisonLine(stream, poison)
    return stream, event["record"], kafka_ts


# A replay allocates millions of short-lived tuples (results, their pieces) over a heap that only
# grows: with the default thresholds the collector walks it again and again (measured: 10% of a
# Golab Table 5 replay). Young collections every 100,000 allocations, and what existed before the
# replay left out of them (`gc.freeze`), make that 1%; the previous settings are restored after.
_GC_THRESHOLDS = (100_000, 50, 1_000)


@contextmanager
def _batch_collection() -> Iterator[None]:
    """Collect garbage less often while a replay runs (cycles are still collected)."""
    previous = gc.get_threshold()
    frozen = gc.get_freeze_count() > 0  # the host froze objects itself: leave them so
    gc.freeze()
    gc.set_threshold(*_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        if not frozen:
            gc.unfreeze()


def replay(
    query: QueryDef,
    lines: Iterable[str],
    out: IO[Any],
    *,
    on_line: Callable[[int], None] | None = None,
    operator: JoinOperator | None = None,
    output_format: Format = "envelope",
    count: bool = False,
    on_malformed: Callable[[DeadLetter], None] | None = None,
) -> JoinOperator:
    """Run `query` over the events `lines`, writing one output line per result to `out`.

    `output_format`: the output record (`envelope`), flat rows (`flat`) or result ids (`ids`);
    `count`: only the number of results, one line at the end. `on_malformed` receives each record
    the query cannot use (see `read_events`), which keeps its offset (its position among its
    stream's lines) as a dead letter keeps its Kafka offset; without `on_malformed` the first one is
    a ReplayError.
    """
    with _batch_collection():
        return _replay(query, lines, out, operator, output_format, count, on_line, on_malformed)


def _replay(
    query: QueryDef,
    lines: Iterable[str],
    out: IO[Any],
    operator: JoinOperator | None,
    output_format: Format,
    count: bool,
    on_line: Callable[[int], None] | None,
    on_malformed: Callable[[DeadLetter], None] | None,
) -> JoinOperator:
    operator = operator or OperatorFactory(query).build()
    writer = make_writer(query, out, output_format, count=count)
    write, piece, add = writer.write, writer.piece, operator.add
    offsets = dict.fromkeys(query.stream_names, 0)
    index = {name: i for i, name in enumerate(query.stream_names)}

    def skip(letter: DeadLetter) -> None:  # a dead letter keeps its offset, as in Kafka
        offsets[letter.stream] += 1
        if on_malformed is not None:
            on_malformed(letter)

    skipping = None if on_malformed is None else skip
    for number, stream, ts, record, size in read_events(query, lines, True, skipping):
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
