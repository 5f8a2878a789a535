"""Output records of many results at once, from their components' pre-encoded pieces.

`ResultFormatter.splicer` formats one result per call; replay and the joiner hand over whole lists
of results (every release of the engine), so `BatchSplicer` gathers their pieces with C-level
`map`s over the list and formats them with one `%` per result (`records`) or one `%` for the whole
list (`block`): no Python bytecode runs per result. The bytes are `splicer`'s, byte for byte.

`records` also takes the engine's runs of results emitted by one entry (`MultiJoin.result_runs`):
such a run shares its timestamp text and the emitter's piece, so they are written once, into a
format of the run, and each result formats only its other members (finding each result's youngest
member was 40% of the splice on a 4-way join).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import chain
from operator import attrgetter, itemgetter
from typing import cast

from streamjoin.engine.entry import Entry
from streamjoin.engine.schedule import EmitterRun

__all__ = ["BatchSplicer", "Piece", "ts_text"]

Piece = tuple[bytes, bytes, bytes, bytes | None]
"""A component as `ResultFormatter.splicer` uses it (`ResultFormatter.piece`): `"stream":` + its raw
JSON, its id fragment `topic:partition:offset`, the raw JSON itself, and the output key if its input
holds the key field (else None)."""

_value = itemgetter(0)
_fragment = itemgetter(1)
_ts = attrgetter("ts")
_youngest = cast(Callable[[Sequence[Entry]], Entry], partial(max, key=attrgetter("ts")))
"""The member whose `ts` is the result's: the first of the largest, the one `max(ts, ...)` returns."""

_SLICE = 8192
"""Results formatted by one `%` in `block` (bounds the format string and its argument tuple)."""


def ts_text(ts: float) -> bytes:
    """Return `ts` as `json.dumps` writes it (`%r` is `float.__repr__`, what it uses when finite)."""
    if type(ts) is int:
        return b"%d" % ts
    return b"%r" % ts if ts - ts == 0.0 else json.dumps(ts).encode()


def _literal(text: bytes) -> bytes:
    """Return `text` as it must appear in a `%` format to come out unchanged."""
    return text.replace(b"%", b"%%")


class BatchSplicer:
    """Format lists of results of one query as output records (`ResultFormatter.batch_splicer`).

    The timestamp text is computed once per distinct youngest member (an entry is the youngest of
    many results), the pieces are read from each member by `piece` (C-level getters when it is
    the default `Entry.extra`). `one`, when given, formats a single result (a query whose records
    carry a trailer): then every result goes through it.
    """

    def __init__(
        self,
        head: bytes,
        arity: int,
        piece: Callable[[Entry], Piece],
        one: Callable[[Sequence[Entry]], bytes] | None = None,
    ) -> None:
        self._n = arity
        self._piece = piece
        self._one = one
        self._head = _literal(head)  # a query or stream name may hold `%`
        self._format = self._record_format(b"%s", [b"%s"] * arity, [b"%s"] * arity)
        self._line = self._format + b"\n"

    def records(self, results: Sequence[Sequence[Entry]], runs: Sequence[EmitterRun] = ()) -> list[bytes]:
        """Return the output record of each result, in order.

        `runs`: the engine's runs of `results` emitted by one entry (`MultiJoin.result_runs`), in
        order; the results outside them are formatted one by one.
        """
        if self._one is not None:
            return list(map(self._one, results))
        if not runs:
            return list(map(self._format.__mod__, self._arguments(results)))
        records: list[bytes] = []
        done = 0
        for start, end, emitter in runs:
            if start > done:
                records += map(self._format.__mod__, self._arguments(results[done:start]))
            records += self._run(results[start:end], emitter)
            done = end
        if done < len(results):
            records += map(self._format.__mod__, self._arguments(results[done:]))
        return records

    def _run(self, results: Sequence[Sequence[Entry]], emitter: Entry) -> list[bytes]:
        """Return the records of results that all hold `emitter`, their youngest, at `emitter.input`."""
        n, at, ts = self._n, emitter.input, emitter.ts
        members = list(chain.from_iterable(results))
        columns = [members[i::n] for i in range(n)]
        text = ts_text(ts)
        # A result's timestamp is its first youngest member's: a member before the emitter as old as
        # it is the one, and its text may differ (1 and 1.0): then the run is formatted one by one.
        for column in columns[:at]:
            if ts in map(_ts, column) and any(ts_text(t) != text for t in map(_ts, column) if t == ts):
                return list(map(self._format.__mod__, self._arguments(results)))
        value, fragment, *_ = self._piece(emitter)
        values: list[bytes] = [b"%s"] * n
        fragments: list[bytes] = [b"%s"] * n
        values[at], fragments[at] = _literal(value), _literal(fragment)
        run_format = self._record_format(_literal(text), values, fragments)
        pieces = [list(map(self._piece, column)) for i, column in enumerate(columns) if i != at]
        arguments = zip(*[map(_value, c) for c in pieces], *[map(_fragment, c) for c in pieces], strict=True)
        return list(map(run_format.__mod__, arguments))

    def block(self, results: Sequence[Sequence[Entry]]) -> bytes:
        """Return the output records of `results`, each followed by a newline, as one bytes."""
        if self._one is not None:
            records = list(map(self._one, results))
            return b"\n".join(records) + b"\n" if records else b""
        line = self._line
        blocks = []
        for start in range(0, len(results), _SLICE):
            part = results[start : start + _SLICE]
            blocks.append((line * len(part)) % tuple(chain.from_iterable(self._arguments(part))))
        return b"".join(blocks)

    def _record_format(self, ts: bytes, values: list[bytes], fragments: list[bytes]) -> bytes:
        """Return the `%` format of a record: `ts`, `values` and id `fragments` are format text."""
        return b'%s%s,"tuples":{%s},"id":"%s"}' % (self._head, ts, b",".join(values), b"|".join(fragments))

    def _arguments(self, results: Sequence[Sequence[Entry]]) -> Iterator[tuple[bytes, ...]]:
        """Return the `%` arguments of each result: timestamp text, values, then id fragments."""
        n = self._n
        tops = list(map(_youngest, results))
        texts = {e: ts_text(e.ts) for e in dict.fromkeys(tops)}
        pieces = list(map(self._piece, chain.from_iterable(results)))
        columns = [pieces[i::n] for i in range(n)]
        return zip(
            map(texts.__getitem__, tops),
            *[map(_value, c) for c in columns],
            *[map(_fragment, c) for c in columns],
            strict=True,
        )
