"""Compute a result's output row from a query's `columns` (`streamjoin.query.columns`).

One function for every path that writes results: the joiner, `streamjoin replay` and the
back-fill all build the output record with `streamjoin.engine.ResultFormatter.value`, which calls
`Projection.row`. Column values are computed by the filter's own evaluator
(`streamjoin.query.expr_eval.compile_value`), compiled once per query: nothing is evaluated as code.

The row, in the order of the select list:

- a column is its expression's value; an arithmetic result that is not a finite number (an
  overflow) is `null`, since JSON has no infinity;
- `s.*` is every field of `s`'s record, in the record's order, named `<stream>_<field>`, except a
  name an explicit column has (the explicit column wins).

>>> from streamjoin.query.columns import parse_columns
>>> cols = parse_columns([{"star": "p"}, {"name": "gross", "expr": {"op": "*", "args": [
...     {"ref": ["o", "amount"]}, 2]}}], frozenset({"o", "p"}))
>>> Projection(cols, ("o", "p")).row([{"amount": 10}, {"id": 7, "total": 19}])
{'p_id': 7, 'p_total': 19, 'gross': 20}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streamjoin.query.columns import Column, Item, Star
from streamjoin.query.expr_eval import Records, compile_value

__all__ = ["Projection"]

_Part = Callable[[Records, dict[str, Any]], None]


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _column(name: str, value: Callable[[Records], Any]) -> _Part:
    def put(records: Records, row: dict[str, Any]) -> None:
        row[name] = _finite(value(records))

    return put


def _star(slot: int, prefix: str, explicit: frozenset[str]) -> _Part:
    def put(records: Records, row: dict[str, Any]) -> None:
        for key, value in records[slot].items():
            name = prefix + key
            if name not in explicit:
                row[name] = value

    return put


class Projection:
    """The compiled select list of one query: `row(records)` gives a result's output row."""

    def __init__(self, items: Sequence[Item], streams: Sequence[str]) -> None:
        """`items`: the query's `columns`; `streams`: its input names, in query order (the slots)."""
        slots: Mapping[str, int] = {name: i for i, name in enumerate(streams)}
        explicit = frozenset(i.name for i in items if isinstance(i, Column))
        self._parts: list[_Part] = [
            _star(slots[item.stream], f"{item.stream}_", explicit)
            if isinstance(item, Star)
            else _column(item.name, compile_value(item.expr, slots))
            for item in items
        ]

    def row(self, records: Records) -> dict[str, Any]:
        """Return the output row of a result whose records are `records` (in query order)."""
        row: dict[str, Any] = {}
        for part in self._parts:
            part(records, row)
        return row
