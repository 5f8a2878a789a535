"""Write a `QueryDef` back as its normalised query JSON (every default spelled out).

`parse_query(dump_query(q)) == q` for every valid query: the registry stores this form, so two
spellings of the same query are stored alike.

>>> from streamjoin.query.parse import parse_query
>>> q = parse_query({"name": "q", "inputs": [{"stream": "a", "window": {"range": 5}},
...     {"stream": "b", "window": {"rows": 2}}], "where": [["a.k", "=", "b.k"]], "output": {"topic": "o"}})
>>> d = dump_query(q)
>>> d["inputs"][0], d["evaluation"], d["order"]
({'stream': 'a', 'topic': 'a', 'timestamp': None, 'window': {'range': 5}}, {'mode': 'eager'}, 'auto')
>>> parse_query(d) == q
True
"""

from __future__ import annotations

from typing import Any

from streamjoin.query.columns import dump_columns
from streamjoin.query.expr import dump_expr
from streamjoin.query.model import FieldRef, ModeDef, Operand, QueryDef, RangeWindow, WindowDef
from streamjoin.query.output import dump_output
from streamjoin.query.shedding import dump_shedding

__all__ = ["dump_mode", "dump_query"]


def _window(window: WindowDef) -> dict[str, Any]:
    if isinstance(window, RangeWindow):
        return {"range": window.range, "strict": True} if window.strict else {"range": window.range}
    out: dict[str, Any] = {"rows": window.rows}
    if window.partition_by is not None:
        out["partition_by"] = window.partition_by
    return out


def _mode(mode: ModeDef) -> dict[str, Any]:
    return {"mode": "lazy", "every": mode.every} if mode.mode == "lazy" else {"mode": mode.mode}


def _operand(operand: Operand) -> Any:
    return str(operand) if isinstance(operand, FieldRef) else operand


def dump_query(query: QueryDef) -> dict[str, Any]:
    """Return the query JSON of `query`, with every optional field present."""
    out: dict[str, Any] = {
        "name": query.name,
        "inputs": [
            {"stream": i.stream, "topic": i.topic, "timestamp": i.timestamp}
            | ({} if i.window is None else {"window": _window(i.window)})
            | (
                {} if i.key is None else {"key": i.key}
            )  # written only when given: stored queries stay as they were
            | ({} if i.format == "json" else {"format": i.format})
            for i in query.inputs
        ],
        "where": [[_operand(p.left), p.op, _operand(p.right)] for p in query.where],
        "output": dump_output(query),
        "evaluation": _mode(query.evaluation),
        "expiration": _mode(query.expiration),
        "algorithm": query.algorithm,
        "order": query.order if query.order == "auto" else list(query.order),
        "lateness": query.lateness,
        "select": None if query.select is None else [str(s) for s in query.select],
        "start": query.start,
    }
    if query.within:  # written only when given, like `strict`: older stored queries stay as they were
        out["within"] = [[p.left, p.right, p.bound] for p in query.within]
    if query.dead_letter_topic is not None:
        out["dead_letter"] = {"topic": query.dead_letter_topic}
    if query.shedding is not None:
        out["shedding"] = dump_shedding(query.shedding)
    if query.filter is not None:  # written only when given, like `within`
        out["filter"] = dump_expr(query.filter)
    if query.columns is not None:  # written only when given, like `filter`
        out["columns"] = dump_columns(query.columns)
    return out


def dump_mode(mode: ModeDef) -> dict[str, Any]:
    """Return the JSON form of an evaluation or expiration mode (inverse of `parse_mode`)."""
    return _mode(mode)
