"""The join graph of a query: its inputs as nodes, an edge per equality between two inputs' fields.

>>> from streamjoin.query.model import FieldRef, InputDef, Predicate
>>> inputs = tuple(InputDef(s, s, None, None) for s in "abc")
>>> try:
...     validate_join_graph(inputs, (Predicate(FieldRef("a", "k"), "=", FieldRef("b", "k")),))
... except QueryError as e:
...     print(e.message)
the join graph is not connected: ['c'] not joined by an equality to ['a', 'b']
"""

from __future__ import annotations

from streamjoin.query.errors import QueryError
from streamjoin.query.model import InputDef, Predicate

__all__ = ["validate_join_graph"]


def validate_join_graph(inputs: tuple[InputDef, ...], where: tuple[Predicate, ...]) -> None:
    """Raise a `QueryError` naming the inputs the equi-join graph does not connect."""
    names = [i.stream for i in inputs]
    adjacent: dict[str, set[str]] = {n: set() for n in names}
    for p in where:
        if p.is_join_edge:
            a, b = sorted(p.streams)
            adjacent[a].add(b)
            adjacent[b].add(a)
    reached = {names[0]}
    frontier = [names[0]]
    while frontier:
        for other in adjacent[frontier.pop()] - reached:
            reached.add(other)
            frontier.append(other)
    missing = [n for n in names if n not in reached]
    if missing:
        raise QueryError(
            "where",
            f"the join graph is not connected: {missing} not joined by an equality to {sorted(reached)}",
        )
