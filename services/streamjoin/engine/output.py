"""The output record of a result (semantics.md section 5): value, Kafka key and stable id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from streamjoin.engine.entry import Entry
from streamjoin.query.model import QueryDef

__all__ = ["Piece", "ResultFormatter"]

Piece = tuple[bytes, bytes]
"""A component as `ResultFormatter.splice` uses it: (`"stream":` + its raw JSON, its id fragment)."""


class ResultFormatter:
    """Format the results of one query as output records."""

    def __init__(self, query: QueryDef) -> None:
        self.query = query
        self._names = query.stream_names
        self._topics = [i.topic for i in query.inputs]
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

    def _fragment(self, e: Entry) -> str:
        return f"{self._topics[e.input]}:{e.partition}:{e.offset}"

    @staticmethod
    def _digest(fragments: list[str]) -> str:
        return hashlib.blake2b("|".join(fragments).encode(), digest_size=16).hexdigest()

    def piece(self, e: Entry, raw: bytes) -> Piece:
        """Return how `splice` uses component `e` whose record arrived as `raw` (cache it per entry)."""
        return self._names_json[e.input] + raw, self._fragment(e).encode()

    def splice(self, result: Sequence[Entry], piece: Callable[[Entry], Piece]) -> tuple[str, bytes]:
        """Return (id, output record) built from each component's raw JSON bytes, as it arrived.

        Equal to `encode` when the query has no `select` (every record is emitted whole), without
        decoding and re-encoding the records: the joiner and the back-fill splice the bytes they read.
        `piece(e)` returns `self.piece(e, raw bytes of e)`; callers cache it per entry, because an
        entry takes part in many results.
        """
        ts = max([e.ts for e in result])
        pieces = [piece(e) for e in result]
        rid = hashlib.blake2b(b"|".join([f for _, f in pieces]), digest_size=16).hexdigest()
        return rid, b"".join(
            (
                self._head,
                b"%d" % ts if type(ts) is int else json.dumps(ts).encode(),
                b',"tuples":{',
                b",".join([v for v, _ in pieces]),
                b'},"id":"',
                rid.encode(),
                b'"}',
            )
        )

    def key(self, result: Sequence[Entry]) -> bytes | None:
        """Return the Kafka key: the value of the first equi-join attribute, as JSON."""
        if self._key is None:
            return None
        index, field = self._key
        return json.dumps(result[index].record.get(field)).encode()

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
