"""The output record of a result (semantics.md section 5): value, Kafka key and stable id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import Any

from streamjoin.engine.entry import Entry
from streamjoin.query.model import QueryDef

__all__ = ["Piece", "ResultFormatter", "json_key"]

Piece = tuple[bytes, bytes]
"""A component as `ResultFormatter.splice` uses it: (`"stream":` + its raw JSON, its id fragment)."""


_ts_of = attrgetter("ts")


def json_key(value: Any) -> bytes:
    """Return `value` as the JSON of an output record's Kafka key (ints without `json.dumps`)."""
    return b"%d" % value if type(value) is int else json.dumps(value).encode()


class ResultFormatter:
    """Format the results of one query as output records."""

    def __init__(self, query: QueryDef) -> None:
        self.query = query
        self._names = query.stream_names
        self._topics_bytes = [i.topic.encode() for i in query.inputs]
        key_field = query.first_join_field
        self._key = (query.input_index(key_field.stream), key_field.field) if key_field else None
        self._names_json = [json.dumps(name).encode() + b":" for name in self._names]
        self._head = b'{"query":' + json.dumps(query.name).encode() + b',"ts":'
        self._select: dict[int, list[str]] | None = None
        if query.select is not None:
            self._select = {}
            for ref in query.select:
                self._select.setdefault(query.input_index(ref.stream), []).append(ref.field)

    def result_id(self, result: Sequence[Entry]) -> str:
        """Return the result's stable id: a digest of its components' (topic, partition, offset)."""
        return self._digest([self._fragment(e) for e in result])

    def _fragment(self, e: Entry) -> bytes:
        return b"%s:%d:%d" % (self._topics_bytes[e.input], e.partition, e.offset)

    @staticmethod
    def _digest(fragments: Iterable[bytes]) -> str:
        return hashlib.blake2b(b"|".join(fragments), digest_size=16).hexdigest()

    def piece(self, e: Entry, raw: bytes) -> Piece:
        """Return how `splice` uses component `e` whose record arrived as `raw` (cache it per entry)."""
        return self._names_json[e.input] + raw, self._fragment(e)

    def splice(self, result: Sequence[Entry], piece: Callable[[Entry], Piece]) -> tuple[str, bytes]:
        """Return (id, output record) built from each component's raw JSON bytes, as it arrived.

        Equal to `encode` when the query has no `select` (every record is emitted whole), without
        decoding and re-encoding the records: the joiner and the back-fill splice the bytes they read.
        `piece(e)` returns `self.piece(e, raw bytes of e)`; callers cache it per entry, because an
        entry takes part in many results.
        """
        ts = max(map(_ts_of, result))
        values, fragments = zip(*map(piece, result), strict=True)
        rid = self._digest(fragments)
        ts_text = b"%d" % ts if type(ts) is int else json.dumps(ts).encode()
        return rid, b'%s%s,"tuples":{%s},"id":"%s"}' % (self._head, ts_text, b",".join(values), rid.encode())

    def key(self, result: Sequence[Entry]) -> bytes | None:
        """Return the Kafka key: the value of the first equi-join attribute, as JSON."""
        if self._key is None:
            return None
        index, field = self._key
        return json_key(result[index].record.get(field))

    def value(self, result: Sequence[Entry]) -> dict[str, Any]:
        """Return the output record `{"query", "ts", "tuples", "id"}`."""
        if self._select is None:
            tuples = {self._names[e.input]: e.record for e in result}
        else:
            tuples = {
                self._names[i]: {f: result[i].record.get(f) for f in fields}
                for i, fields in self._select.items()
            }
        return {
            "query": self.query.name,
            "ts": max(e.ts for e in result),
            "tuples": tuples,
            "id": self.result_id(result),
        }

    def encode(self, result: Sequence[Entry]) -> bytes:
        """Return the output record as compact UTF-8 JSON."""
        return json.dumps(self.value(result), separators=(",", ":")).encode()
