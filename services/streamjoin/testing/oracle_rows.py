"""The oracle's output rows of a query with a select list of `columns` (docs/queries.md, "The select list").

Brute force from the documented rules, sharing no code with the engine's `Projection`: every
result of `expected_results` gets the row its columns give, each value computed by the oracle's own
expression walk (`oracle_filter.evaluate`); `s.*` gives every field of `s`'s record as
`<stream>_<field>` unless an explicit column has that name; a non-finite number is `null`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from streamjoin.query.columns import Column, Star
from streamjoin.query.model import QueryDef
from streamjoin.testing.oracle import Event, expected_results
from streamjoin.testing.oracle_filter import evaluate

__all__ = ["expected_rows", "project"]


def project(query: QueryDef, records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Return the output row of a result of `query` (with `columns`) whose records are by input name."""
    if query.columns is None:
        raise ValueError(f"query {query.name!r} has no columns")
    explicit = {c.name for c in query.columns if isinstance(c, Column)}
    row: dict[str, Any] = {}
    for item in query.columns:
        if isinstance(item, Star):
            for key, value in records[item.stream].items():
                if f"{item.stream}_{key}" not in explicit:
                    row[f"{item.stream}_{key}"] = value
        else:
            value = evaluate(item.expr, records)
            row[item.name] = (
                None if isinstance(value, float) and (math.isinf(value) or math.isnan(value)) else value
            )
    return row


def expected_rows(query: QueryDef, events: Sequence[Event]) -> dict[str, dict[str, Any]]:
    """Return the row of every result of `query` over `events`, by result id (`topic:p:o|...`)."""
    by_position = {(e.stream, e.partition, e.offset): e for e in events}
    names, topics = query.stream_names, [i.topic for i in query.inputs]
    rows: dict[str, dict[str, Any]] = {}
    for key in expected_results(query, events):
        members = [by_position[(names[i], p, o)] for i, (p, o) in enumerate(key)]
        result_id = "|".join(f"{topics[i]}:{e.partition}:{e.offset}" for i, e in enumerate(members))
        rows[result_id] = project(query, {e.stream: e.record for e in members})
    return rows
