"""The oracle's own reading of a query's `filter` (docs/queries.md, "The filter expression").

A plain tree walk, written from the documented rules and sharing no code with the engine's compiled
evaluator (`streamjoin.query.expr_eval`), so the two check each other: NULL is `None`; a missing
key, a path through a non-object, a NULL operand, a wrong type or a division by zero give NULL;
`and`/`or`/`not` are Kleene's; a result passes only when the filter is true.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from streamjoin.query.expr import Call, Expr, Lit, Ref

__all__ = ["evaluate", "filter_holds"]


def _num(v: Any) -> bool:
    return type(v) in (int, float)


def _cmp(op: str, a: Any, b: Any) -> bool | None:
    if a is None or b is None:
        return None
    try:
        if op == "=":
            return bool(a == b)
        if op == "!=":
            return bool(a != b)
        if op == "<":
            return bool(a < b)
        if op == "<=":
            return bool(a <= b)
        if op == ">":
            return bool(a > b)
        return bool(a >= b)
    except TypeError:
        return None


def _kleene(values: list[Any], is_and: bool) -> bool | None:
    truths = [v if isinstance(v, bool) else None for v in values]
    if is_and:
        return False if False in truths else (None if None in truths else True)
    return True if True in truths else (None if None in truths else False)


def _eval(e: Expr, records: Mapping[str, Mapping[str, Any]]) -> Any:
    if isinstance(e, Lit):
        return e.value
    if isinstance(e, Ref):
        value: Any = records[e.stream]
        for key in e.path:
            value = value.get(key) if isinstance(value, Mapping) else None
        return value
    assert isinstance(e, Call)
    op, args = e.op, [_eval(a, records) for a in e.args]
    if op in ("and", "or"):
        return _kleene(args, op == "and")
    if op == "not":
        return (not args[0]) if isinstance(args[0], bool) else None
    if op in ("=", "!=", "<", "<=", ">", ">="):
        return _cmp(op, args[0], args[1])
    if op == "between":
        return _kleene([_cmp("<=", args[1], args[0]), _cmp("<=", args[0], args[2])], True)
    if op == "in":
        return _kleene([_cmp("=", args[0], v) for v in args[1:]], False)
    if op == "is_null":
        return args[0] is None
    if op == "coalesce":
        return next((v for v in args if v is not None), None)
    if op in ("+", "-", "*", "/", "%"):
        a, b = args
        if not (_num(a) and _num(b)) or (op in "/%" and b == 0):
            return None
        try:
            return (
                {"+": a + b, "-": a - b, "*": a * b}[op] if op in "+-*" else (a / b if op == "/" else a % b)
            )
        except OverflowError:
            return None
    a = args[0]
    if op in ("lower", "upper", "length"):
        if not isinstance(a, str):
            return None
        return a.lower() if op == "lower" else a.upper() if op == "upper" else len(a)
    if not _num(a):
        return None
    if op == "round":
        digits = args[1] if len(args) > 1 else 0
        return round(a, digits) if type(digits) is int else None
    if op in ("floor", "ceil") and not math.isfinite(a):
        return None
    return {
        "neg": lambda: -a,
        "abs": lambda: abs(a),
        "floor": lambda: math.floor(a),
        "ceil": lambda: math.ceil(a),
    }[op]()


def evaluate(expr: Expr, records: Mapping[str, Mapping[str, Any]]) -> Any:
    """Return the value of `expr` for a result whose records are given by input name."""
    return _eval(expr, records)


def filter_holds(expr: Expr, records: Mapping[str, Mapping[str, Any]]) -> bool:
    """Return True when `expr` is true for a result whose records are given by input name."""
    return _eval(expr, records) is True
