"""Join algorithms: how a window is probed (Golab & Özsu section 4: hash join or nested loops).

An algorithm is chosen once, when the engine is built (`algorithm_for(query)`), and decides two
things for the compiler: which attributes each window indexes, and which equality (if any) a step
probes in an index instead of checking it in the loop. The loops in `execute.py` run any program.

A new algorithm is a class with these two methods plus one line in `ALGORITHMS` (and its name in
`streamjoin.query.grammar.Algorithm`, which the parser, the API schema and the docs read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from streamjoin.engine.edges import JoinEdge, index_fields
from streamjoin.query.model import QueryDef

__all__ = ["ALGORITHMS", "HashJoin", "JoinAlgorithm", "NestedLoops", "algorithm_for"]


class JoinAlgorithm(Protocol):
    """What the compiler and the planner's cost model ask of a join algorithm."""

    name: str
    probes_index: bool
    """Whether a step may probe a hash index: the cost model then counts a probe's candidates per
    bucket (one bucket per distinct key), else the whole window."""

    def index_fields(self, query: QueryDef) -> dict[str, list[str]]:
        """Return, per input, the attributes its window keeps a hash index on."""
        ...

    def probe_edge(self, stream: str, needed: Sequence[JoinEdge], indexed: Sequence[str]) -> JoinEdge | None:
        """Return the equality `stream`'s step probes its index with, or None to scan the window.

        `needed` are the predicates to bound inputs this step must satisfy (the origin's first);
        `indexed` the attributes the window of `stream` is indexed on.
        """
        ...


class HashJoin:
    """The multi-way hash join: probe one bucket per window where an equality to a bound record exists."""

    name = "hash"
    probes_index = True

    def index_fields(self, query: QueryDef) -> dict[str, list[str]]:
        """Index every equi-join attribute of every input."""
        return index_fields(query)

    def probe_edge(self, stream: str, needed: Sequence[JoinEdge], indexed: Sequence[str]) -> JoinEdge | None:
        """Probe with the first indexed equality: the origin's value first (one bucket for all)."""
        return next((e for e in needed if e.op == "=" and e.other(stream)[0] in indexed), None)


class NestedLoops:
    """Nested loops: scan every window, check every predicate in the loop."""

    name = "nlj"
    probes_index = False

    def index_fields(self, query: QueryDef) -> dict[str, list[str]]:
        """Index nothing."""
        return {s: [] for s in query.stream_names}

    def probe_edge(self, stream: str, needed: Sequence[JoinEdge], indexed: Sequence[str]) -> JoinEdge | None:
        """Never probe: scan."""
        return None


ALGORITHMS: Mapping[str, JoinAlgorithm] = {"hash": HashJoin(), "nlj": NestedLoops()}


def algorithm_for(query: QueryDef) -> JoinAlgorithm:
    """Return the registered algorithm the query names."""
    try:
        return ALGORITHMS[query.algorithm]
    except KeyError:
        raise ValueError(f"unknown join algorithm {query.algorithm!r}; known: {sorted(ALGORITHMS)}") from None
