"""The join graph as the planner sees it: equivalence classes of join attributes.

Equalities between inputs (`a.x = b.x`, `b.x = c.y`) are grouped into classes of `(stream, field)`
that must all carry the same value. A query whose every input is in one class joins on one common
attribute, Golab & Özsu's setting, where any order is valid; otherwise (joins on different
attributes) a new stream is best added only once an equality connects it to the streams placed
before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streamjoin.engine.edges import equality_classes
from streamjoin.query.model import QueryDef

__all__ = ["JoinGraph"]


@dataclass(frozen=True, slots=True)
class JoinGraph:
    """Input streams and the classes of `(stream, field)` that equalities join together."""

    streams: tuple[str, ...]
    classes: tuple[frozenset[tuple[str, str]], ...]

    @classmethod
    def common(cls, streams: Sequence[str], field: str = "key") -> JoinGraph:
        """Return the graph of streams equi-joined on one common attribute `field`."""
        return cls(tuple(streams), (frozenset((s, field) for s in streams),))

    @classmethod
    def from_query(cls, query: QueryDef) -> JoinGraph:
        """Return the graph of `query`'s equi-join edges: the engine's classes of equal fields."""
        classes = sorted((frozenset(c) for c in equality_classes(query)), key=lambda g: min(g))
        return cls(query.stream_names, tuple(classes))

    def fields(self, stream: str, klass: int) -> tuple[str, ...]:
        """Return the fields of `stream` in class number `klass` (sorted; empty if none)."""
        return tuple(sorted(f for s, f in self.classes[klass] if s == stream))
