"""Translate a SQL select list into the query JSON's `select` or `columns` (`streamjoin.query.sql`).

- `SELECT *`: nothing (every result's records whole, as always);
- only plain `alias.field` columns (`SELECT o.id, p.total`): `select`, as in CQL (the envelope
  keeps `tuples`, with those fields);
- anything else, `expr [AS name]` and `s.*` items: `columns` (`streamjoin.query.columns`), rows of
  exactly those columns. A column without `AS` is named `<stream>_<key>_...` for a field path
  (the flat format's name), `expr_<position>` for any other expression.

Every problem is an error at its position: an unknown alias or function, an aggregate, a type an
operator never takes (`lower(1)`), a name used twice or reserved for the row's own fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from streamjoin.query.columns import RESERVED, check_types, default_name
from streamjoin.query.cql_lex import CqlError
from streamjoin.query.errors import QueryError
from streamjoin.query.expr import Expr, dump_expr

__all__ = ["select_list"]


def _plain(item: exp.Expr) -> bool:
    return isinstance(item, exp.Column) and not isinstance(item.this, exp.Star) and len(item.parts) == 2


def _check_types(
    node: exp.Expr, value: Expr, expr: Callable[[exp.Expr], Expr], fail: Callable[[exp.Expr, str], CqlError]
) -> None:
    """Check `value`'s types (`check_types`); the error is at the innermost node that fails."""
    try:
        check_types(value, "sql")
    except QueryError as exc:
        problem, at = exc.message, node
        descended = True
        while descended:  # down the failing child while there is one: the innermost failing node
            descended = False
            for child in at.iter_expressions():
                try:
                    value = expr(child)
                except CqlError:  # not an expression of its own (a name, a keyword)
                    continue
                try:
                    check_types(value, "sql")
                except QueryError as inner:
                    problem, at, descended = inner.message, child, True
                    break
        raise fail(at, problem) from None


def select_list(
    items: list[exp.Expr],
    expr: Callable[[exp.Expr], Expr],
    alias: dict[str, str],
    fail: Callable[[exp.Expr, str], CqlError],
) -> dict[str, Any]:
    """Return `{}`, `{"select": [...]}` or `{"columns": [...]}` for the items of a SELECT.

    Args:
        items: the select list, as sqlglot parsed it.
        expr: the translation of an expression (`SqlTerms.expr`: aliases resolved, functions checked).
        alias: the streams by alias (or name) in FROM.
        fail: the error at a node's position.
    """
    if len(items) == 1 and isinstance(items[0], exp.Star):
        return {}
    if all(map(_plain, items)):
        return {"select": [str(expr(item)) for item in items]}
    columns: list[dict[str, Any]] = []
    names: dict[str, int] = {}
    for position, item in enumerate(items):
        node, name = (item.this, item.alias) if isinstance(item, exp.Alias) else (item, None)
        if isinstance(node, exp.Star):
            raise fail(node, "* stands alone in the select list: write s.* for one stream's fields")
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            if name is not None:
                raise fail(item, "s.* takes no AS")
            parts = node.parts
            if len(parts) != 2 or parts[0].name not in alias:
                raise fail(node, f"unknown stream or alias {parts[0].name!r}")
            columns.append({"star": alias[parts[0].name]})
            continue
        value = expr(node)
        _check_types(node, value, expr, fail)
        name = name or default_name(value, position)
        if name in RESERVED:
            raise fail(
                item, f"column name {name!r} is a field of every output row: name it otherwise with AS"
            )
        if name in names:
            raise fail(
                item, f"column name {name!r} is also column {names[name]}: give one another name with AS"
            )
        names[name] = position
        columns.append({"name": name, "expr": dump_expr(value)})
    return {"columns": columns}
