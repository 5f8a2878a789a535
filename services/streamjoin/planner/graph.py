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

from streamjoin.query.model import FieldRef, QueryDef

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
        """Return the graph of `query`'s equi-join edges (union-find over their fields)."""
        parent: dict[tuple[str, str], tuple[str, str]] = {}

        def find(x: tuple[str, str]) -> tuple[str, str]:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for edge in query.join_edges:
            left, right = edge.left, edge.right
            if isinstance(left, FieldRef) and isinstance(right, FieldRef):
                a, b = find((left.stream, left.field)), find((right.stream, right.field))
                if a != b:
                    parent[max(a, b)] = min(a, b)
        groups: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for member in list(parent):
            groups.setdefault(find(member), set()).add(member)
        classes = sorted((frozenset(g) for g in groups.values()), key=lambda g: min(g))
        return cls(query.stream_names, tuple(classes))

    def fields(self, stream: str, klass: int) -> tuple[str, ...]:
        """Return the fields of `stream` in class number `klass` (sorted; empty if none)."""
        return tuple(sorted(f for s, f in self.classes[klass] if s == stream))
