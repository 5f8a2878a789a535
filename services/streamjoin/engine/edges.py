"""The join graph as the compiler sees it: the edges between inputs, and the partial results it binds.

An edge is a predicate relating fields of two different inputs (`JoinEdge`); equalities close
transitively into classes (`equality_classes`), and each input is hash-indexed on the attributes of
its classes (`index_fields`). The join algorithms (`algorithm.py`), the window models
(`admission.py`) and the compiler (`program.py`) all read these; none of this depends on them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from streamjoin.engine.entry import Entry
from streamjoin.query.model import FieldRef, QueryDef

__all__ = [
    "JoinEdge",
    "PairCheck",
    "Partial",
    "closed_edges",
    "equality_classes",
    "index_fields",
    "join_edges",
]


Partial = tuple[Entry, ...]
PairCheck = Callable[[Partial, Entry], bool]


@dataclass(frozen=True, slots=True)
class JoinEdge:
    """A predicate between fields of two different inputs: `left.lfield op right.rfield`."""

    left: str
    lfield: str
    op: str
    right: str
    rfield: str

    def other(self, stream: str) -> tuple[str, str, str]:
        """Return (this stream's field, the other stream, the other stream's field)."""
        if stream == self.left:
            return self.lfield, self.right, self.rfield
        return self.rfield, self.left, self.lfield


def join_edges(query: QueryDef) -> list[JoinEdge]:
    """Return every predicate that relates two different inputs, as written."""
    edges = []
    for p in query.where:
        if isinstance(p.left, FieldRef) and isinstance(p.right, FieldRef) and p.left.stream != p.right.stream:
            edges.append(JoinEdge(p.left.stream, p.left.field, p.op, p.right.stream, p.right.field))
    return edges


def equality_classes(query: QueryDef) -> list[list[tuple[str, str]]]:
    """Return the classes of (stream, field) that equalities make equal, transitively.

    `a.x = b.x AND b.x = c.x` puts a.x, b.x and c.x in one class, so `a` and `c` join by an equality
    although none is written between them: any order can probe `c` with `a`'s value.
    """
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(x: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for e in join_edges(query):
        if e.op == "=":
            parent[find((e.left, e.lfield))] = find((e.right, e.rfield))
    classes: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for member in list(parent):
        classes.setdefault(find(member), []).append(member)
    return [sorted(c) for c in classes.values()]


def closed_edges(query: QueryDef) -> list[JoinEdge]:
    """Return the theta edges as written plus every equality implied between two inputs."""
    edges = [e for e in join_edges(query) if e.op != "="]
    for members in equality_classes(query):
        for i, (a, fa) in enumerate(members):
            for b, fb in members[i + 1 :]:
                if a != b:
                    edges.append(JoinEdge(a, fa, "=", b, fb))
    return edges


def index_fields(query: QueryDef) -> dict[str, list[str]]:
    """Return, per input, the attributes it is equi-joined on (each gets a hash index)."""
    fields: dict[str, list[str]] = {s: [] for s in query.stream_names}
    for members in equality_classes(query):
        for stream, field in members:
            if field not in fields[stream]:
                fields[stream].append(field)
    return fields
