"""Write a query JSON's inputs, windows, `within` pairs, where and select back as CQL text.

The inverse of `streamjoin.query.cql.parse_cql`: `parse_cql(format_cql(q), streams)` gives back
`q`'s fields. Identifiers that are keywords or not plain words are quoted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["RESERVED", "format_cql"]

RESERVED = frozenset(
    {
        "SELECT",
        "FROM",
        "WHERE",
        "AND",
        "OR",
        "NOT",
        "RANGE",
        "ROWS",
        "PARTITION",
        "BY",
        "STRICT",
        "WITHIN",
        "TRUE",
        "FALSE",
        "NULL",
    }
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _ident(name: str) -> str:
    if _IDENT.fullmatch(name) and name.upper() not in RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def _field(name: str) -> str:
    return name if _IDENT.fullmatch(name) else '"' + name.replace('"', '""') + '"'


def _operand(value: Any, streams: frozenset[str]) -> str:
    if isinstance(value, str):
        stream, dot, field = value.partition(".")
        if dot and field and stream in streams:
            return f"{_ident(stream)}.{_field(field)}"
        return "'" + value.replace("'", "''") + "'"
    if value is None or isinstance(value, bool):
        return {None: "NULL", True: "TRUE", False: "FALSE"}[value]
    if isinstance(value, int | float) and math.isfinite(value):
        return json.dumps(value)
    raise ValueError(f"cannot write {value!r} as a CQL literal")


def _input(item: Mapping[str, Any]) -> str:
    window = item.get("window")
    return _ident(item["stream"]) if window is None else f"{_ident(item['stream'])} [{_window(window)}]"


def _window(window: Mapping[str, Any]) -> str:
    if "range" in window:
        strict = " STRICT" if window.get("strict") else ""
        return f"RANGE {json.dumps(window['range'])}{strict}"
    rows = f"ROWS {int(window['rows'])}"
    partition_by = window.get("partition_by")
    return rows if partition_by is None else f"PARTITION BY {_ident(partition_by)} {rows}"


def format_cql(query: Mapping[str, Any]) -> str:
    """Return the CQL text of a query JSON's inputs, within, where, select and shedding (the rest has no CQL).

    Raises ValueError for a query with a `filter` or `columns`: CQL has no OR, arithmetic, functions or AS.

    >>> format_cql({"inputs": [{"stream": "a", "window": {"range": 5, "strict": True}}, {"stream": "b"}],
    ...     "within": [["a", "b", 3]], "where": [["a.k", "=", "b.k"]]})
    'SELECT * FROM a [RANGE 5 STRICT], b WITHIN (a, b) 3 WHERE a.k = b.k'
    """
    if query.get("filter") is not None or query.get("columns") is not None:
        raise ValueError(
            "a query with a filter expression or select columns has no CQL form (write it in SQL)"
        )
    inputs: Sequence[Mapping[str, Any]] = query["inputs"]
    streams = frozenset(str(i["stream"]) for i in inputs)
    select = query.get("select")
    head = "*" if not select else ", ".join(_operand(s, streams) for s in select)
    parts = [f"SELECT {head} FROM " + ", ".join(_input(i) for i in inputs)]
    within = query.get("within") or []
    if within:
        pairs = (f"({_ident(x)}, {_ident(y)}) {json.dumps(w)}" for x, y, w in within)
        parts.append("WITHIN " + ", ".join(pairs))
    where = query.get("where") or []
    if where:
        conditions = (f"{_operand(a, streams)} {op} {_operand(b, streams)}" for a, op, b in where)
        parts.append("WHERE " + " AND ".join(conditions))
    shedding = query.get("shedding")
    if shedding:
        parts.append(_shed(shedding))
    return " ".join(parts)


def _shed(shedding: Mapping[str, Any]) -> str:
    text = f"SHED MEMORY {int(shedding['memory'])} POLICY {shedding['policy']}"
    if shedding.get("importance") is not None:
        text += f" IMPORTANCE {_field(shedding['importance'])}"
    if shedding.get("combine", "min") != "min":
        text += f" COMBINE {shedding['combine']}"
    if shedding.get("seed", 0) != 0:
        text += f" SEED {int(shedding['seed'])}"
    return text
