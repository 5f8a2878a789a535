"""The `within` pairs of a SQL query: CQL's WITHIN, ksqlDB's `JOIN ... WITHIN`, Flink's interval joins.

`streamjoin.query.sql_terms` calls this once the inputs and the terms of ON and WHERE are read;
`streamjoin.query.sql_bounds` finds the bounds. What cannot be a pair of inputs exactly is refused
with the streamjoin form to write instead (docs/queries.md, "Bounded joins from Flink SQL and
ksqlDB").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from sqlglot import exp

from streamjoin.query.cql import CqlStream
from streamjoin.query.cql_lex import CqlError
from streamjoin.query.expr import Expr, Ref
from streamjoin.query.sql_bounds import BoundsError, TimeBounds, join_within, timestamp_term
from streamjoin.query.sql_clauses import JoinWithin, only

__all__ = ["SqlPairs"]

Term = tuple[int, Expr]


class _Terms(Protocol):
    text: str
    streams: Mapping[str, CqlStream]
    alias: dict[str, str]
    error: Callable[[str, int, str], CqlError]


class _Clauses(Protocol):
    join_within: list[JoinWithin]


def _size(ms: int | float) -> str:
    return f"{ms} MILLISECONDS" if ms % 1000 else f"{int(ms // 1000)} SECONDS"


class SqlPairs:
    """Turn a query's bounds between inputs into `within` pairs."""

    def __init__(
        self, terms: _Terms, inputs: Sequence[Mapping[str, Any]], joins: Sequence[exp.Expr], clauses: _Clauses
    ) -> None:
        self._t = terms
        self._inputs = [str(i["stream"]) for i in inputs]
        self._windowless = {str(i["stream"]) for i in inputs if "window" not in i}
        self._joins = joins
        self._clauses = clauses
        self._timestamps = {s: terms.streams[s].timestamp for s in self._inputs}

    def _fail(self, position: int, message: str) -> CqlError:
        return self._t.error(self._t.text, position, message)

    def bounds(self, within: list[list[Any]], terms: list[Term]) -> tuple[list[list[Any]], list[Term]]:
        """Return every `within` pair (CQL's `within` first) and the terms the pairs leave."""
        pairs = [list(p) for p in within]
        terms = list(terms)
        for clause in self._clauses.join_within:
            self._join_within(clause, pairs, terms)
        explicit = [frozenset(p[:2]) for p in pairs]
        try:
            found = TimeBounds(self._inputs, self._timestamps).collect(terms, explicit)
        except BoundsError as exc:
            raise self._fail(exc.position, exc.message) from None
        pairs += found.within
        bounded = {s for p in pairs for s in p[:2]}
        for position, (x, y) in found.one_sided:
            loose = [s for s in (x, y) if s in self._windowless and s not in bounded]
            if loose:
                raise self._fail(
                    position,
                    f"this bounds the timestamps of {x} and {y} on one side only, and {loose[0]} has no "
                    "window, so its records could be needed forever: bound them on both sides "
                    "(x.ts BETWEEN y.ts - INTERVAL ... AND y.ts + INTERVAL ...) "
                    f"or write WITHIN ({x}, {y}) n",
                )
        return pairs, found.terms

    def _join_within(self, clause: JoinWithin, pairs: list[list[Any]], terms: list[Term]) -> None:
        """Add ksqlDB's `JOIN s WITHIN ...` as a pair (symmetric) or as the comparisons it means."""
        text = only(self._t.text, *clause.span)
        try:
            before, after = join_within(text)
        except CqlError as exc:
            raise self._fail(exc.position, exc.problem) from None
        written = " ".join(text.split())
        if clause.join < 0:
            raise self._fail(
                clause.position,
                f"WITHIN {written} follows a JOIN (ksqlDB: JOIN s WITHIN {written} ON ...); between inputs "
                "listed with commas write WITHIN (a, b) n after them",
            )
        right = self._inputs[clause.join + 1]
        if clause.join > 0:
            raise self._fail(clause.position, self._later_join(clause.join, written))
        left = self._inputs[0]
        if any(frozenset(p[:2]) == {left, right} for p in pairs):
            raise self._fail(
                clause.position,
                f"the pair ({left}, {right}) is bounded twice: here and by WITHIN ({left}, {right})",
            )
        if before == after:
            if before <= 0:
                raise self._fail(clause.position, "a WITHIN size must be > 0")
            pairs.append([left, right, before])
            return
        fields = self._timestamps[left], self._timestamps[right]
        if None in fields:
            no_field = right if fields[1] is None else left
            raise self._fail(
                clause.position,
                f"WITHIN {written} is not symmetric: a within pair bounds |{left} - {right}|, "
                f"and {no_field} has no timestamp field to compare the sides with: write WITHIN "
                f"{_size(max(before, after))} (|{left} - {right}| <= {max(before, after)})",
            )
        x, y = Ref(right, (str(fields[1]),)), Ref(left, (str(fields[0]),))
        terms.append((clause.position, timestamp_term(">=", x, y, -before)))
        terms.append((clause.position, timestamp_term("<=", x, y, after)))

    def _later_join(self, index: int, written: str) -> str:
        """Return why ksqlDB's WITHIN on a later JOIN is refused, with the pair to write instead."""
        join = self._joins[index]
        name = join.this.alias_or_name
        on = join.args.get("on")
        partners = sorted({c.table for c in on.find_all(exp.Column) if c.table} - {name}) if on else []
        partner = partners[0] if partners else next(iter(self._t.alias))
        return (
            f"WITHIN on a JOIN after the first bounds {name} against the newest record joined before it "
            "(ksqlDB), which is not a pair of inputs: name the pairs to bound after the last input, "
            f"e.g. WITHIN ({partner}, {name}) {written}"
        )
