"""Checks shared by the parsers of hand-written JSON files (topic catalog, STREAMS.json).

>>> json_object({"name": "a"}, "topics[0]", {"name", "role"}, ValueError)
{'name': 'a'}
>>> json_object({"nme": "a"}, "topics[0]", {"name", "role"}, ValueError)
Traceback (most recent call last):
...
ValueError: topics[0]: unknown field(s) ['nme']
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

__all__ = ["json_object"]


def json_object(
    value: object, where: str, allowed: Collection[str], error: Callable[[str], Exception]
) -> dict[str, Any]:
    """Return `value` if it is a JSON object with no field outside `allowed`.

    Args:
        value: the decoded JSON value.
        where: its place in the document (`topics[2]`), first in every message.
        allowed: the field names it may have.
        error: the exception to raise, built from the message.
    """
    if not isinstance(value, dict):
        raise error(f"{where}: must be an object")
    unknown = set(value) - set(allowed)
    if unknown:
        raise error(f"{where}: unknown field(s) {sorted(unknown)}")
    return value
