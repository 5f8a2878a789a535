"""The output record of a result (semantics.md section 5): value, Kafka key and stable id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from streamjoin.engine.entry import Entry
from streamjoin.query.model import QueryDef

__all__ = ["ResultFormatter"]


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

    def splice(
        self,
        result: Sequence[Entry],
        raw: Callable[[Entry], bytes],
        *,
        fragments: dict[tuple[int, int], str] | None = None,
    ) -> tuple[str, bytes]:
        """Return (id, output record) built from each component's raw JSON bytes, as it arrived.

        Equal to `encode` when the query has no `select` (every record is emitted whole), without
        decoding and re-encoding the records: the joiner and the back-fill splice the bytes they read.
        `fragments` caches each component's id fragment by (input, offset) across calls.
        """
        ts = max(e.ts for e in result)
        parts = [self._head, str(ts).encode() if type(ts) is int else json.dumps(ts).encode(), b',"tuples":{']
        ids = []
        for i, e in enumerate(result):
            if i:
                parts.append(b",")
            parts += (self._names_json[e.input], raw(e))
            if fragments is None:
                ids.append(self._fragment(e))
            else:
                ident = (e.input, e.offset)
                fragment = fragments.get(ident)
                if fragment is None:
                    fragment = fragments[ident] = self._fragment(e)
                ids.append(fragment)
        rid = self._digest(ids)
        parts += (b'},"id":"', rid.encode(), b'"}')
        return rid, b"".join(parts)

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
