"""How `streamjoin replay` writes results: one strategy per `--format`, chosen once.

Each writer computes what it needs of a record once, when it arrives (`piece`, kept in
`Entry.extra`), splices those pieces per result, and writes large buffered chunks of bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import IO, Any, Literal, Protocol

from streamjoin.engine import ResultFormatter
from streamjoin.engine.entry import Entry
from streamjoin.engine.output import encode_json
from streamjoin.query import QueryDef

__all__ = ["FORMATS", "Format", "ResultWriter", "make_writer"]

Format = Literal["envelope", "flat", "ids"]
FORMATS: tuple[Format, ...] = ("envelope", "flat", "ids")

_CHUNK = 1 << 20
"""Bytes gathered before one write."""

_extra = attrgetter("extra")


class ResultWriter(Protocol):
    """What `replay` needs of an output format."""

    def piece(self, input: int, offset: int, record: Mapping[str, Any]) -> object:
        """Return what the writer keeps of a record (its `Entry.extra`)."""
        ...

    def write(self, results: Sequence[Sequence[Entry]]) -> None:
        """Write `results` (buffered)."""
        ...

    def close(self) -> None:
        """Write what is buffered (and for `--count`, the count)."""
        ...


class _Chunks:
    """Bytes lines gathered into large writes to a text or binary stream."""

    def __init__(self, out: IO[Any]) -> None:
        self._pending: list[bytes] = []
        self._size = 0
        binary = getattr(out, "buffer", None)
        if binary is not None:  # a real file or stdout: write bytes, after what text it holds
            out.flush()
            self._emit: Callable[[bytes], object] = binary.write
        else:
            self._emit = lambda chunk: out.write(chunk.decode())

    def lines(self, lines: list[bytes]) -> None:
        self.add(_lines(lines))

    def add(self, chunk: bytes) -> None:
        """Write `chunk`, lines each ending with a newline (buffered)."""
        if not chunk:
            return
        self._pending.append(chunk)
        self._size += len(chunk)
        if self._size >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            chunk = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._emit(chunk)
            self._pending, self._size = [], 0


class _Envelope:
    """The output record of docs/queries.md, as the joiner writes it (spliced pieces)."""

    def __init__(self, query: QueryDef, out: IO[Any]) -> None:
        self._formatter = ResultFormatter(query)
        self._chunks = _Chunks(out)
        spliced = not query.projects
        encode = self._formatter.encode
        self._block: Callable[[Sequence[Sequence[Entry]]], bytes] = (
            self._formatter.batch_splicer().block if spliced else lambda rs: _lines(list(map(encode, rs)))
        )
        self._piece = self._spliced_piece if spliced else _no_piece

    def _spliced_piece(self, input: int, offset: int, record: Mapping[str, Any]) -> object:
        return self._formatter.record_piece(input, 0, offset, record)

    def piece(self, input: int, offset: int, record: Mapping[str, Any]) -> object:
        return self._piece(input, offset, record)

    def write(self, results: Sequence[Sequence[Entry]]) -> None:
        self._chunks.add(self._block(results))

    def close(self) -> None:
        self._chunks.flush()


class _Flat:
    """`{"query", "ts", "id", "<stream>_<field>": ...}`: the envelope's tuples flattened."""

    def __init__(self, query: QueryDef, out: IO[Any]) -> None:
        self._formatter = ResultFormatter(query)
        self._chunks = _Chunks(out)
        self._names = query.stream_names
        self._prefix = self._formatter.prefix + b'"ts":'
        self._topics = [i.topic.encode() for i in query.inputs]
        self._select = query.projects

    def piece(self, input: int, offset: int, record: Mapping[str, Any]) -> object:
        fragment = b"%s:0:%d" % (self._topics[input], offset)
        if self._select:
            return (b"", fragment)
        name = self._names[input]
        return encode_json({f"{name}_{k}": v for k, v in record.items()})[1:-1], fragment

    def write(self, results: Sequence[Sequence[Entry]]) -> None:
        self._chunks.lines([self._flat(r) for r in results])

    def _flat(self, result: Sequence[Entry]) -> bytes:
        fields, fragments = zip(*map(_extra, result), strict=True)
        if self._select:
            return encode_json(self._formatter.flat(result))
        ts = max(e.ts for e in result)
        body = b",".join(f for f in fields if f)
        return b'%s%s,"id":"%s"%s%s}' % (
            self._prefix,
            encode_json(ts),
            b"|".join(fragments),
            b"," if body else b"",
            body,
        )

    def close(self) -> None:
        self._chunks.flush()


class _Ids:
    """One result id per line (`topic:partition:offset|...`, no quotes)."""

    def __init__(self, query: QueryDef, out: IO[Any]) -> None:
        self._chunks = _Chunks(out)
        self._topics = [i.topic.encode() for i in query.inputs]

    def piece(self, input: int, offset: int, record: Mapping[str, Any]) -> object:
        return b"%s:0:%d" % (self._topics[input], offset)

    def write(self, results: Sequence[Sequence[Entry]]) -> None:
        self._chunks.lines([b"|".join(map(_extra, r)) for r in results])

    def close(self) -> None:
        self._chunks.flush()


class _Count:
    """The number of results, one line at the end."""

    def __init__(self, out: IO[Any]) -> None:
        self._out = out
        self.count = 0

    def piece(self, input: int, offset: int, record: Mapping[str, Any]) -> object:
        return None

    def write(self, results: Sequence[Sequence[Entry]]) -> None:
        self.count += len(results)

    def close(self) -> None:
        self._out.write(f"{self.count}\n")


def _lines(lines: list[bytes]) -> bytes:
    return b"\n".join(lines) + b"\n" if lines else b""


def _no_piece(input: int, offset: int, record: Mapping[str, Any]) -> object:
    return None


def make_writer(
    query: QueryDef, out: IO[Any], output_format: Format = "envelope", *, count: bool = False
) -> ResultWriter:
    """Return the writer of `output_format` (or of the count alone) to `out`."""
    if count:
        return _Count(out)
    writers: dict[Format, Callable[[QueryDef, IO[Any]], ResultWriter]] = {
        "envelope": _Envelope,
        "flat": _Flat,
        "ids": _Ids,
    }
    return writers[output_format](query, out)
