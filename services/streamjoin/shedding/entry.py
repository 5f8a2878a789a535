"""What a shedding policy sees of a record: `ShedEntry`, and how it is built from a query's records.

A policy never reads records: the engine (or the reference simulator) turns each arriving record into
a `ShedEntry` with `EntryFactory`, which knows from the query which fields join which windows. A
record's *keys* are, for each window it joins by equality, the tuple of its values on those equality
edges; a record of the other window with the same tuple (on the same edges, same order) matches it.

>>> from streamjoin.query import parse_query
>>> q = parse_query({"name": "q", "output": {"topic": "o"},
...     "inputs": [{"stream": s, "timestamp": "ts", "window": {"range": 3}} for s in "rs"],
...     "where": [["r.k", "=", "s.k"]], "shedding": {"memory": 4, "policy": "simp", "importance": "imp"}})
>>> make = EntryFactory(q)
>>> make.entry(0, seq=7, ts=2, record={"ts": 2, "k": 9, "imp": 20})
ShedEntry(window=0, seq=7, ts=2, importance=20, keys=((1, (9,)),))
>>> make.combine((1.0, 20.0))
1.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from streamjoin.query.grammar import CombineName
from streamjoin.query.model import FieldRef, QueryDef

__all__ = ["COMBINE", "BadImportance", "EntryFactory", "ShedEntry"]


class BadImportance(ValueError):
    """A record's importance field is missing or not a number > 0."""


@dataclass(frozen=True, slots=True)
class ShedEntry:
    """One record as a shedding policy sees it.

    Attributes:
        window: the index of its window (its input's position in the query).
        seq: an identifier unique among the entries one policy sees (the arrival sequence number).
        ts: its timestamp.
        importance: its importance (> 0).
        keys: (other window, key) for every window it joins by equality.
    """

    window: int
    seq: int
    ts: float
    importance: float
    keys: tuple[tuple[int, Hashable], ...]


def _product(values: Sequence[float]) -> float:
    return math.prod(values)


COMBINE: dict[CombineName, Callable[[Sequence[float]], float]] = {
    "min": min,
    "max": max,
    "sum": math.fsum,
    "product": _product,
    "avg": lambda values: math.fsum(values) / len(values),
}
"""A result's importance from its members' importances, by the `combine` name."""


class EntryFactory:
    """Build `ShedEntry`s for the records of one query; read importance; combine importances."""

    def __init__(self, query: QueryDef) -> None:
        names = query.stream_names
        edges: dict[tuple[int, int], list[tuple[str, str]]] = {}
        for p in query.join_edges:
            left, right = p.left, p.right
            if not (isinstance(left, FieldRef) and isinstance(right, FieldRef)):
                continue
            a, b = names.index(left.stream), names.index(right.stream)
            edges.setdefault((a, b), []).append((left.field, right.field))
            edges.setdefault((b, a), []).append((right.field, left.field))
        # For window i: (j, fields of i on the edges i-j), the edges in `where` order on both sides.
        self._fields: tuple[tuple[tuple[int, tuple[str, ...]], ...], ...] = tuple(
            tuple((j, tuple(mine for mine, _ in edges[(i, j)])) for j in range(len(names)) if (i, j) in edges)
            for i in range(len(names))
        )
        shedding = query.shedding
        self._importance = None if shedding is None else shedding.importance
        self.combine: Callable[[Sequence[float]], float] = COMBINE[
            "min" if shedding is None else shedding.combine
        ]

    @property
    def neighbours(self) -> tuple[tuple[int, ...], ...]:
        """Return, for each window, the windows it joins by an equality."""
        return tuple(tuple(j for j, _ in fields) for fields in self._fields)

    def importance(self, record: Mapping[str, Any]) -> float:
        """Return the importance of `record` (1 when the query names no importance field).

        Raises:
            BadImportance: the field is missing, not a number, or not > 0.
        """
        if self._importance is None:
            return 1.0
        value = record.get(self._importance)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise BadImportance(f"importance field {self._importance!r} must be a number > 0, not {value!r}")
        return value

    def entry(self, window: int, *, seq: int, ts: float, record: Mapping[str, Any]) -> ShedEntry:
        """Return the `ShedEntry` of `record`, arriving in `window`."""
        keys = tuple((j, tuple(_freeze(record.get(f)) for f in fields)) for j, fields in self._fields[window])
        return ShedEntry(window, seq, ts, self.importance(record), keys)


def _freeze(value: Any) -> Hashable:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return cast(Hashable, value)
