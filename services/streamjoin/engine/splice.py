"""Output records of many results at once, from their components' pre-encoded pieces.

`ResultFormatter.splicer` formats one result per call; replay and the joiner hand over whole lists
of results (every release of the engine), so `BatchSplicer` gathers their pieces with C-level
`map`s over the list and formats them with one `%` per result (`records`) or one `%` for the whole
list (`block`): no Python bytecode runs per result. The bytes are `splicer`'s, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import chain
from operator import attrgetter, itemgetter
from typing import cast

from streamjoin.engine.entry import Entry

__all__ = ["BatchSplicer", "Piece", "ts_text"]

Piece = tuple[bytes, bytes, bytes, bytes | None]
"""A component as `ResultFormatter.splicer` uses it (`ResultFormatter.piece`): `"stream":` + its raw
JSON, its id fragment `topic:partition:offset`, the raw JSON itself, and the output key if its input
holds the key field (else None)."""

_value = itemgetter(0)
_fragment = itemgetter(1)
_youngest = cast(Callable[[Sequence[Entry]], Entry], partial(max, key=attrgetter("ts")))
"""The member whose `ts` is the result's: the first of the largest, the one `max(ts, ...)` returns."""

_SLICE = 8192
"""Results formatted by one `%` in `block` (bounds the format string and its argument tuple)."""


def ts_text(ts: float) -> bytes:
    """Return `ts` as `json.dumps` writes it (`%r` is `float.__repr__`, what it uses when finite)."""
    if type(ts) is int:
        return b"%d" % ts
    return b"%r" % ts if ts - ts == 0.0 else json.dumps(ts).encode()


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
        values = b",".join([b"%s"] * arity)
        fragments = b"|".join([b"%s"] * arity)
        self._format = b'%s%%s,"tuples":{%s},"id":"%s"}' % (head, values, fragments)
        self._line = self._format + b"\n"

    def records(self, results: Sequence[Sequence[Entry]]) -> list[bytes]:
        """Return the output record of each result, in order."""
        if self._one is not None:
            return list(map(self._one, results))
        return list(map(self._format.__mod__, self._arguments(results)))

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
