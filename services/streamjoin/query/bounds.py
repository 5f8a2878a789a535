"""Pairwise time bounds of a query: which inputs bound which, and how tightly (docs/windows.md).

The **bound graph** has the query's inputs as nodes and two kinds of edges:

- one per `within` pair `[x, y, w]`, of weight `w` (Hammad et al.'s W-join constraint);
- one between every two inputs that both have a range window, of weight `max(T_x, T_y)`: every
  component of a result is at most its own window older than the newest, so two range-windowed
  components are never more than the larger of their windows apart.

The bound implied for a pair is the length of the shortest path between them: by the triangle
inequality `|ts(x) - ts(y)|` is at most the sum along any path, and placing every component at its
distance from `x` reaches the bound, so it cannot be tightened further (Hammad et al., section 5).
A query is valid only if no input's records can be needed forever: an input without a window must
be connected to every other input in this graph (`unbounded_input`).

Hammad's Fig. 11 (A-B 3, B-C 4, C-D 5, B-D 2; A-C and A-D not given):

>>> from streamjoin.query.parse import parse_definition
>>> q = parse_definition({"name": "fig11", "output": {"topic": "o"},
...     "inputs": [{"stream": s} for s in "ABCD"],
...     "where": [["A.k", "=", "B.k"], ["B.k", "=", "C.k"], ["C.k", "=", "D.k"]],
...     "within": [["A", "B", 3], ["B", "C", 4], ["C", "D", 5], ["B", "D", 2]]})
>>> pair_bounds(q)[("A", "D")], pair_bounds(q)[("A", "C")]
(5, 7)
>>> [b for b in bounds_report(q) if b["streams"] == ["A", "D"]]
[{'streams': ['A', 'D'], 'bound': 5, 'given': None, 'path': ['A', 'B', 'D']}]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamjoin.query.model import InputDef, QueryDef, RangeWindow, WindowDef, WithinPair

__all__ = ["bound_graph", "bounds_report", "effective_window", "pair_bounds", "unbounded_input"]


def bound_graph(inputs: Sequence[InputDef], within: Sequence[WithinPair]) -> Any:
    """Return the bound graph (a `networkx.Graph`, edge attribute `weight`) of these inputs."""
    import networkx as nx  # here, not at the top: it takes longer to import than all of streamjoin.query

    graph = nx.Graph()
    graph.add_nodes_from(i.stream for i in inputs)
    ranges = [(i.stream, i.window.range) for i in inputs if isinstance(i.window, RangeWindow)]
    for n, (x, tx) in enumerate(ranges):
        for y, ty in ranges[n + 1 :]:
            graph.add_edge(x, y, weight=max(tx, ty))
    for pair in within:
        known = graph.get_edge_data(pair.left, pair.right)
        if known is None or pair.bound < known["weight"]:
            graph.add_edge(pair.left, pair.right, weight=pair.bound)
    return graph


def unbounded_input(inputs: Sequence[InputDef], within: Sequence[WithinPair]) -> tuple[int, list[str]] | None:
    """Return (index, unreached inputs) of an input whose records could be needed forever, or None.

    A query whose inputs all have windows is bounded. Otherwise every input without a window must
    be connected, in the bound graph, to every other input. Of the windowless inputs that are not,
    the one in the smallest connected part is named (the first in query order on a tie): the
    input left out, rather than the ones it is missing.
    """
    if all(i.window is not None for i in inputs):
        return None
    import networkx as nx

    graph = bound_graph(inputs, within)
    worst: tuple[int, int, list[str]] | None = None
    for index, inp in enumerate(inputs):
        if inp.window is None:
            reached = nx.node_connected_component(graph, inp.stream)
            missing = [i.stream for i in inputs if i.stream not in reached]
            if missing and (worst is None or len(reached) < worst[0]):
                worst = (len(reached), index, missing)
    return None if worst is None else (worst[1], worst[2])


def _shortest(query: QueryDef) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, list[str]]]]:
    import networkx as nx

    graph = bound_graph(query.inputs, query.within)
    lengths: dict[str, dict[str, float]] = {}
    paths: dict[str, dict[str, list[str]]] = {}
    for node, (length, path) in nx.all_pairs_dijkstra(graph, weight="weight"):
        lengths[node] = length
        paths[node] = path
    return lengths, paths


def pair_bounds(query: QueryDef) -> dict[tuple[str, str], float]:
    """Return the tightest bound on `|ts(x) - ts(y)|` implied by the query, for every bounded pair.

    Keys are `(x, y)` with `x` before `y` in the query's input order; a pair nothing bounds (say,
    two inputs with count windows) is absent.
    """
    lengths, _ = _shortest(query)
    names = query.stream_names
    return {
        (x, y): lengths[x][y] for n, x in enumerate(names) for y in names[n + 1 :] if y in lengths.get(x, {})
    }


def bounds_report(query: QueryDef) -> list[dict[str, Any]]:
    """Return the bounds as the plan shows them: each pair, its bound, the bound given, the path.

    `given` is the `within` bound the query states for the pair (None if it states none); `bound`
    is at most `given`, smaller when a path through other inputs is tighter.
    """
    _, paths = _shortest(query)
    given = {pair.streams: pair.bound for pair in query.within}
    return [
        {
            "streams": [x, y],
            "bound": bound,
            "given": given.get(frozenset((x, y))),
            "path": paths[x][y],
        }
        for (x, y), bound in pair_bounds(query).items()
    ]


def effective_window(query: QueryDef, stream: str) -> WindowDef:
    """Return the input's window, or for an input without one the range window its bounds imply.

    A record of an input bounded only by `within` pairs can join nothing more than
    `max_y bound(stream, y)` newer than itself, so that range window holds for every result: it is
    implied, never an extra condition. Planning and back-fill reach use it; the result set is
    defined by the bounds themselves.
    """
    window = query.inputs[query.input_index(stream)].window
    if window is not None:
        return window
    reach = max(bound for pair, bound in pair_bounds(query).items() if stream in pair)
    return RangeWindow(range=reach)
