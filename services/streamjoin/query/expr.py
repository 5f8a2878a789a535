"""Typed expressions of a query's `filter`: field paths, literals and operator calls.

A query's `where` triples stay a conjunction of comparisons (its equalities between two inputs
form the join graph); everything richer — `OR`, `NOT`, arithmetic, functions, `BETWEEN`, `IN`,
`IS NULL`, nested JSON paths — is the query's `filter`, one expression tree that must hold for
every result as well. Its JSON form (docs/queries.md, "The filter expression"):

- a field path: `{"ref": ["o", "user", "id"]}` (the input, then the keys into its record);
- a literal: a JSON scalar (`1.2`, `"x"`, `true`, `null`);
- an operator call: `{"op": ">", "args": [left, right]}`, operators as in `OPERATORS`.

The JSON is data: it is walked and checked here, never evaluated as code. `streamjoin.query.
expr_eval` compiles a tree into closures.

>>> e = parse_expr({"op": ">", "args": [{"op": "*", "args": [{"ref": ["o", "amount"]}, 1.2]},
...     {"ref": ["p", "total"]}]}, frozenset({"o", "p"}), "filter")
>>> sorted(streams_of(e))
['o', 'p']
>>> dump_expr(e) == {"op": ">", "args": [{"op": "*", "args": [{"ref": ["o", "amount"]}, 1.2]},
...     {"ref": ["p", "total"]}]}
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from streamjoin.query.errors import QueryError
from streamjoin.query.grammar import COMPARISONS
from streamjoin.query.names import parse_field

__all__ = [
    "OPERATORS",
    "Call",
    "Expr",
    "Lit",
    "Ref",
    "conjuncts",
    "dump_expr",
    "parse_expr",
    "split_filter",
    "streams_of",
]

JsonScalar: TypeAlias = str | int | float | bool | None
_MAX_DEPTH = 64
_MANY = 1_000  # the most arguments of one call (`IN` lists)

OPERATORS: Mapping[str, tuple[int, int]] = {
    # name: (fewest, most) arguments
    "and": (2, _MANY),
    "or": (2, _MANY),
    "not": (1, 1),
    **dict.fromkeys(COMPARISONS, (2, 2)),
    "+": (2, 2),
    "-": (2, 2),
    "*": (2, 2),
    "/": (2, 2),
    "%": (2, 2),
    "neg": (1, 1),
    "between": (3, 3),
    "in": (2, _MANY),
    "is_null": (1, 1),
    "abs": (1, 1),
    "lower": (1, 1),
    "upper": (1, 1),
    "length": (1, 1),
    "round": (1, 2),
    "floor": (1, 1),
    "ceil": (1, 1),
    "coalesce": (1, _MANY),
}
"""Every operator of the filter language, with its number of arguments."""


@dataclass(frozen=True, slots=True)
class Ref:
    """A field of an input's record, by path: `o.user.id` is `Ref("o", ("user", "id"))`."""

    stream: str
    path: tuple[str, ...]

    def __str__(self) -> str:
        return ".".join((self.stream, *self.path))


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal JSON scalar."""

    value: JsonScalar


@dataclass(frozen=True, slots=True)
class Call:
    """An operator applied to its arguments (`OPERATORS` names the operators)."""

    op: str
    args: tuple[Expr, ...]


Expr: TypeAlias = Ref | Lit | Call


def _streams(expr: Expr, out: set[str]) -> None:
    if isinstance(expr, Ref):
        out.add(expr.stream)
    elif isinstance(expr, Call):
        for arg in expr.args:
            _streams(arg, out)


def refs_of(expr: Expr) -> list[Ref]:
    """Return the field paths `expr` reads, in the order written."""
    if isinstance(expr, Ref):
        return [expr]
    if isinstance(expr, Call):
        return [ref for arg in expr.args for ref in refs_of(arg)]
    return []


def streams_of(expr: Expr) -> frozenset[str]:
    """Return the inputs `expr` mentions."""
    out: set[str] = set()
    _streams(expr, out)
    return frozenset(out)


def conjuncts(expr: Expr) -> tuple[Expr, ...]:
    """Return the top-level `and` terms of `expr` (flattened), or `(expr,)`."""
    if isinstance(expr, Call) and expr.op == "and":
        return tuple(term for arg in expr.args for term in conjuncts(arg))
    return (expr,)


def _is_scalar(value: object) -> bool:
    if value is None or isinstance(value, str | bool):
        return True
    return isinstance(value, int | float) and math.isfinite(value)


def _parse(raw: object, streams: frozenset[str], where: str, depth: int) -> Expr:
    if depth > _MAX_DEPTH:
        raise QueryError(where, f"nested deeper than {_MAX_DEPTH}")
    if _is_scalar(raw):
        return Lit(cast(JsonScalar, raw))
    if not isinstance(raw, Mapping):
        raise QueryError(where, 'must be a JSON scalar, {"ref": [...]} or {"op": ..., "args": [...]}')
    spec = cast(Mapping[str, Any], raw)
    if set(spec) == {"ref"}:
        path = spec["ref"]
        if not isinstance(path, list) or len(path) < 2 or not all(isinstance(p, str) and p for p in path):
            raise QueryError(
                f"{where}.ref", "must be a list [stream, key, ...] of at least 2 non-empty strings"
            )
        if path[0] not in streams:
            raise QueryError(f"{where}.ref", f"unknown input {path[0]!r}; the inputs are {sorted(streams)}")
        return Ref(path[0], tuple(parse_field(p, f"{where}.ref[{i}]") for i, p in enumerate(path) if i))
    if set(spec) != {"op", "args"}:
        raise QueryError(where, f'an expression object has "ref", or "op" and "args"; found {sorted(spec)}')
    op = spec["op"]
    if not isinstance(op, str) or op not in OPERATORS:
        raise QueryError(f"{where}.op", f"unknown operator {op!r}; use one of {sorted(OPERATORS)}")
    args = spec["args"]
    fewest, most = OPERATORS[op]
    if not isinstance(args, list) or not fewest <= len(args) <= most:
        wanted = str(fewest) if fewest == most else f"{fewest} to {most}"
        raise QueryError(f"{where}.args", f"{op!r} takes a list of {wanted} arguments")
    return Call(op, tuple(_parse(a, streams, f"{where}.args[{i}]", depth + 1) for i, a in enumerate(args)))


def parse_expr(raw: object, streams: frozenset[str], where: str) -> Expr:
    """Return the expression of its JSON form; `streams` are the query's inputs, `where` the field.

    Raises:
        QueryError: an unknown operator or input, a wrong number of arguments, or a bad node.
    """
    return _parse(raw, streams, where, 0)


def dump_expr(expr: Expr) -> Any:
    """Return the JSON form of `expr` (inverse of `parse_expr`)."""
    if isinstance(expr, Ref):
        return {"ref": [expr.stream, *expr.path]}
    if isinstance(expr, Lit):
        return expr.value
    return {"op": expr.op, "args": [dump_expr(a) for a in expr.args]}


def split_filter(expr: Expr | None, names: Sequence[str]) -> tuple[dict[str, Expr], tuple[Expr, ...]]:
    """Split a filter into per-input filters and the terms that relate several inputs.

    Returns (the conjunction of the terms that mention input `s` only, by `s`; the other terms).
    A term that mentions no input (`false`) goes with the first input: every result has one.
    """
    single: dict[str, list[Expr]] = {}
    multi: list[Expr] = []
    for term in conjuncts(expr) if expr is not None else ():
        streams = streams_of(term)
        if len(streams) > 1:
            multi.append(term)
        else:
            single.setdefault(next(iter(streams)) if streams else names[0], []).append(term)
    return {
        s: terms[0] if len(terms) == 1 else Call("and", tuple(terms)) for s, terms in single.items()
    }, tuple(multi)
