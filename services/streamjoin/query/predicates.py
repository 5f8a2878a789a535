"""What a `where` comparison means on two values: the operators, and a missing field or values of
types that cannot be compared make a predicate false (docs/queries.md, "Predicates").

The engine compiles these operators into its loops; the brute-force oracle and the shedding
simulator evaluate predicates one by one with `compare`.

>>> compare("<", 1, 2), compare("=", "1", 1), compare("<", "a", 1), compare("=", MISSING, 1)
(True, False, False, False)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MISSING", "OPERATORS", "compare"]

OPERATORS: Mapping[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

MISSING: Any = object()
"""The value of a field a record does not have."""


def compare(op: str, left: Any, right: Any) -> bool:
    """Return whether `left op right` holds; False for a missing side or incomparable types."""
    if left is MISSING or right is MISSING:
        return False
    try:
        return bool(OPERATORS[op](left, right))
    except TypeError:
        return False
