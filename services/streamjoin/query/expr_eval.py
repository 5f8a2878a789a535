"""Compile a filter expression (`streamjoin.query.expr`) into closures over a result's records.

Nothing is evaluated as code: each node becomes a small Python function, built once per plan.
Values follow SQL's three-valued logic, with `None` as SQL NULL (docs/queries.md):

- a missing key (or a path through a non-object) reads as NULL;
- comparisons, arithmetic and functions of a NULL are NULL, and so are operands of the wrong type
  (`'a' < 3`, `lower(5)`, `1 + true`) and a division by zero;
- `and`/`or`/`not` are Kleene's (`false and NULL` is false, `true or NULL` is true);
- `x IN (...)` is true on a match, NULL when there is none but NULL is among the values;
- a result passes the filter only when it evaluates to `true`.

>>> from streamjoin.query.expr import parse_expr
>>> e = parse_expr({"op": "between", "args": [{"ref": ["a", "u", "n"]}, 1, 3]}, frozenset("a"), "f")
>>> test = compile_predicate(e, {"a": 0})
>>> test([{"u": {"n": 2}}]), test([{"u": {"n": 9}}]), test([{"u": 7}])
(True, False, False)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streamjoin.query.expr import Call, Expr, Lit, Ref

__all__ = ["Records", "compile_predicate", "compile_value"]

Records = Sequence[Mapping[str, Any]]
"""The records of a (partial) result, by slot."""
_Fn = Callable[[Records], Any]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        try:
            return bool(op(a, b))
        except TypeError:
            return None

    return apply


def _arith(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if not (_number(a) and _number(b)):
            return None
        try:
            return op(a, b)
        except (ZeroDivisionError, OverflowError):
            return None

    return apply


def _unary(test: Callable[[Any], bool], op: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def apply(a: Any) -> Any:
        if not test(a):
            return None
        try:
            return op(a)
        except (OverflowError, ValueError):
            return None

    return apply


def _round(a: Any, digits: Any = 0) -> Any:
    if not _number(a) or not isinstance(digits, int) or isinstance(digits, bool):
        return None
    try:
        return round(a, digits)
    except (OverflowError, ValueError):
        return None


def _truth(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _and(values: Sequence[Any]) -> bool | None:
    result: bool | None = True
    for value in values:
        truth = _truth(value)
        if truth is False:
            return False
        if truth is None:
            result = None
    return result


def _or(values: Sequence[Any]) -> bool | None:
    result: bool | None = False
    for value in values:
        truth = _truth(value)
        if truth is True:
            return True
        if truth is None:
            result = None
    return result


_eq = _compare(operator.eq)
_le = _compare(operator.le)
_SCALAR: Mapping[str, Callable[..., Any]] = {
    "=": _eq,
    "!=": _compare(operator.ne),
    "<": _compare(operator.lt),
    "<=": _le,
    ">": _compare(operator.gt),
    ">=": _compare(operator.ge),
    "+": _arith(operator.add),
    "-": _arith(operator.sub),
    "*": _arith(operator.mul),
    "/": _arith(operator.truediv),
    "%": _arith(operator.mod),
    "neg": _unary(_number, operator.neg),
    "abs": _unary(_number, abs),
    "floor": _unary(_number, math.floor),
    "ceil": _unary(_number, math.ceil),
    "lower": _unary(lambda a: isinstance(a, str), str.lower),
    "upper": _unary(lambda a: isinstance(a, str), str.upper),
    "length": _unary(lambda a: isinstance(a, str), len),
    "round": _round,
    "not": lambda a: None if _truth(a) is None else not a,
    "is_null": lambda a: a is None,
    "between": lambda x, lo, hi: _and((_le(lo, x), _le(x, hi))),
    "coalesce": lambda *values: next((v for v in values if v is not None), None),
}


def _in(x: Any, *values: Any) -> bool | None:
    return _or([_eq(x, v) for v in values])


def _ref(slot: int, path: tuple[str, ...]) -> _Fn:
    if len(path) == 1:
        key = path[0]
        return lambda records: records[slot].get(key)

    def read(records: Records) -> Any:
        value: Any = records[slot]
        for key in path:
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
        return value

    return read


def compile_value(expr: Expr, slots: Mapping[str, int]) -> _Fn:
    """Return a function of a result's records (`records[slots[stream]]`) to the value of `expr`."""
    if isinstance(expr, Ref):
        return _ref(slots[expr.stream], expr.path)
    if isinstance(expr, Lit):
        value = expr.value
        return lambda records: value
    return _call(expr, slots)


def _call(expr: Call, slots: Mapping[str, int]) -> _Fn:
    args = [compile_value(a, slots) for a in expr.args]
    if expr.op in ("and", "or"):
        # Short-circuit: a false conjunct (a true disjunct) decides without the rest.
        decisive = expr.op == "or"

        def logic(records: Records) -> Any:
            result: bool | None = not decisive
            for arg in args:
                truth = _truth(arg(records))
                if truth is decisive:
                    return decisive
                if truth is None:
                    result = None
            return result

        return logic
    fn = _in if expr.op == "in" else _SCALAR[expr.op]
    if len(args) == 1:
        (only,) = args
        return lambda records: fn(only(records))
    if len(args) == 2:
        left, right = args
        return lambda records: fn(left(records), right(records))
    return lambda records: fn(*[arg(records) for arg in args])


def compile_predicate(expr: Expr, slots: Mapping[str, int]) -> Callable[[Records], bool]:
    """Return a test of a result's records: True exactly when `expr` evaluates to true."""
    value = compile_value(expr, slots)
    return lambda records: value(records) is True
