"""The select list of a query as a projection: `columns`, each a named expression or `s.*`.

A query with `columns` emits rows of exactly those columns instead of its joined records
(docs/queries.md, "The select list"). Its JSON form is a list of items:

- `{"name": "gross", "expr": EXPR}`: a column named `name`, the value of `EXPR` (the filter
  expression language of `streamjoin.query.expr`: field paths, literals, operators, functions);
- `{"star": "orders"}`: every field of that input's record, each as a column `<stream>_<field>`
  (the names the flat format gives them).

Names are checked here: unique, not one of the row's own fields (`RESERVED`), at most
`MAX_NAME` characters. So is what can be known of each expression's type before any record
arrives (`check_types`): a literal or a function result of the wrong type (`lower(1)`, `'a' * 2`)
is an error at registration. The runtime, one function shared by the joiner, replay and the
back-fill, is `streamjoin.query.projection`.

>>> cols = parse_columns([{"star": "o"}, {"name": "gross", "expr": {"op": "*", "args": [
...     {"ref": ["o", "amount"]}, 1.2]}}], frozenset({"o", "p"}))
>>> [c.name if isinstance(c, Column) else c.stream for c in cols]
['o', 'gross']
>>> dump_columns(cols)[0]
{'star': 'o'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from streamjoin.names import FIELD_MAX
from streamjoin.query.errors import QueryError
from streamjoin.query.expr import Expr, Lit, Ref, dump_expr, parse_expr
from streamjoin.query.grammar import COMPARISONS

__all__ = [
    "MAX_COLUMNS",
    "MAX_NAME",
    "RESERVED",
    "Column",
    "Item",
    "Star",
    "check_types",
    "default_name",
    "dump_columns",
    "parse_columns",
]

RESERVED: frozenset[str] = frozenset({"query", "ts", "id", "importance"})
"""The fields every output row has besides its columns (the flat format writes them beside)."""
MAX_COLUMNS = 1_000
MAX_NAME = FIELD_MAX
"""A column names a field of the output row: the field rule (`streamjoin.names`)."""

Type: TypeAlias = Literal["number", "string", "bool", "null", "any"]


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the output row: its name and the expression of its value."""

    name: str
    expr: Expr


@dataclass(frozen=True, slots=True)
class Star:
    """`s.*`: every field of input `stream`'s record, named `<stream>_<field>`."""

    stream: str


Item: TypeAlias = Column | Star


def default_name(expr: Expr, position: int) -> str:
    """Return the name of a column written without `AS`: `<stream>_<key>_...` for a field path
    (the flat format's name for it), `expr_<position>` for anything else (position from 0).

    >>> default_name(Ref("orders", ("user", "id")), 0), default_name(Lit(1), 3)
    ('orders_user_id', 'expr_3')
    """
    if isinstance(expr, Ref):
        return "_".join((expr.stream, *expr.path))
    return f"expr_{position}"


# What each operator needs of its arguments, and what it returns (`any`: not known before a record).
_NUMERIC = frozenset({"+", "-", "*", "/", "%", "neg", "abs", "floor", "ceil", "round"})
_TEXT = frozenset({"lower", "upper", "length"})
_BOOLEAN = frozenset({"and", "or", "not"})
_COMPARE = frozenset(COMPARISONS)
_RESULT: Mapping[str, Type] = {
    **dict.fromkeys(_NUMERIC, "number"),
    "lower": "string",
    "upper": "string",
    "length": "number",
    **dict.fromkeys(("and", "or", "not", *COMPARISONS, "between", "in", "is_null"), "bool"),
}
_WANTED: Mapping[str, Type] = {
    **dict.fromkeys(_NUMERIC, "number"),
    **dict.fromkeys(_TEXT, "string"),
    **dict.fromkeys(_BOOLEAN, "bool"),
}


def _literal_type(value: object) -> Type:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return "string" if isinstance(value, str) else "number"


def check_types(expr: Expr, where: str) -> Type:
    """Return the type of `expr`'s value as far as it is known without a record.

    Raises:
        QueryError: an operator or function is given an argument of a type it never takes (a NULL
            literal is allowed anywhere: its result is NULL, as in SQL).
    """
    if isinstance(expr, Ref):
        return "any"
    if isinstance(expr, Lit):
        return _literal_type(expr.value)
    kinds = [check_types(arg, where) for arg in expr.args]
    wanted = _WANTED.get(expr.op)
    if wanted is not None:
        for i, kind in enumerate(kinds):
            if kind not in (wanted, "any", "null") and not (
                expr.op == "round" and i == 1 and kind == "number"
            ):
                raise QueryError(
                    where, f"{_shown(expr.op)} takes a {wanted}, not a {kind} ({_arg(expr.args[i])})"
                )
    known = [k for k in kinds if k not in ("any", "null")]
    if expr.op in _COMPARE and len(set(known)) > 1:
        raise QueryError(where, f"'{expr.op}' compares a {known[0]} with a {known[1]}")
    return _RESULT.get(expr.op, "any")


def _shown(op: str) -> str:
    return f"{op}()" if op.isalpha() and op not in _BOOLEAN and op != "neg" else f"'{op}'"


def _arg(expr: Expr) -> str:
    if isinstance(expr, Lit):
        return repr(expr.value)
    return str(expr) if isinstance(expr, Ref) else f"the result of {_shown(expr.op)}"


def parse_columns(raw: object, streams: frozenset[str], *, select: object = None) -> tuple[Item, ...] | None:
    """Return the projection of its JSON form (None when absent); `streams` are the query's inputs.

    Raises:
        QueryError: not a non-empty list of items, an unknown input, a bad expression or type, a
            name that is empty, reserved, too long or used twice, or `select` given as well.
    """
    if raw is None:
        return None
    if select is not None:
        raise QueryError("columns", "give either select or columns, not both")
    if not isinstance(raw, list) or not raw or len(raw) > MAX_COLUMNS:
        raise QueryError("columns", f"must be a non-empty list of at most {MAX_COLUMNS} columns")
    items: list[Item] = []
    names: dict[str, int] = {}
    for i, entry in enumerate(raw):
        where = f"columns[{i}]"
        if not isinstance(entry, Mapping):
            raise QueryError(where, 'must be {"name": ..., "expr": ...} or {"star": "stream"}')
        spec = cast(Mapping[str, Any], entry)
        if set(spec) == {"star"}:
            if not isinstance(spec["star"], str) or spec["star"] not in streams:
                raise QueryError(
                    f"{where}.star", f"unknown input {spec['star']!r}; the inputs are {sorted(streams)}"
                )
            items.append(Star(spec["star"]))
            continue
        if set(spec) != {"name", "expr"}:
            raise QueryError(where, f'a column has "name" and "expr", or "star"; found {sorted(spec)}')
        name = spec["name"]
        if not isinstance(name, str) or not name or len(name) > MAX_NAME:
            raise QueryError(f"{where}.name", f"must be a non-empty string of at most {MAX_NAME} characters")
        if name in RESERVED:
            raise QueryError(
                f"{where}.name",
                f"{name!r} is a field of every output row ({', '.join(sorted(RESERVED))}): "
                "name the column otherwise",
            )
        if name in names:
            raise QueryError(
                f"{where}.name", f"column {name!r} is also column {names[name]}: names must be unique"
            )
        names[name] = i
        expr = parse_expr(spec["expr"], streams, f"{where}.expr")
        check_types(expr, f"{where}.expr")
        items.append(Column(name, expr))
    return tuple(items)


def dump_columns(items: Sequence[Item]) -> list[dict[str, Any]]:
    """Return the JSON form of a projection (inverse of `parse_columns`)."""
    return [
        {"star": item.stream} if isinstance(item, Star) else {"name": item.name, "expr": dump_expr(item.expr)}
        for item in items
    ]
