"""The one JSON spelling of every registry value: compact, strict, keys sorted."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "json_object"]


def dumps(value: object) -> str:
    """Return `value` as compact, strict JSON (no NaN or infinity).

    >>> dumps({"b": 1, "a": [1.5, None]})
    '{"a":[1.5,null],"b":1}'
    """
    return json.dumps(value, separators=(",", ":"), allow_nan=False, sort_keys=True)


def json_object(raw: str | bytes, what: str) -> dict[str, Any]:
    """Return the JSON object `raw`; raise `ValueError` naming `what` if it is not an object."""
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value
