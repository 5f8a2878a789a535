"""Expand a query JSON that carries its inputs as `sql` or `cql` text (the replay CLI's input).

Over REST the streams come from the registry; a file-based tool gives them as a JSON object
`{"orders": {"topic": "shop.orders", "timestamp": "ts"}, ...}` (`streams_from_json`).

>>> streams = streams_from_json({"a": {"timestamp": "ts"}, "b": {"topic": "net.b", "timestamp": "ts"}})
>>> q = expand_text({"name": "q", "output": {"topic": "o"},
...     "sql": "SELECT * FROM a [RANGE 5] AS x JOIN b [ROWS 2] AS y ON x.k = y.k"}, streams)
>>> q["inputs"][1]["topic"], q["where"]
('net.b', [['a.k', '=', 'b.k']])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamjoin.query.cql import CqlStream, parse_cql
from streamjoin.query.errors import QueryError
from streamjoin.query.streams import streams_from_json

__all__ = ["expand_text", "streams_from_json"]

_TEXT_REPLACES = ("inputs", "where", "select", "within", "filter", "shedding", "columns")


def expand_text(raw: Mapping[str, Any], streams: Mapping[str, CqlStream] | None) -> dict[str, Any]:
    """Return `raw` with its `sql` or `cql` text replaced by the fields it gives.

    Raises:
        QueryError: both texts, a text and a field it replaces, a text without `streams`, or a
            text that does not parse (field `sql` or `cql`, with the position).
    """
    spec = dict(raw)
    texts = [k for k in ("sql", "cql") if k in spec]
    if not texts:
        return spec
    if len(texts) > 1:
        raise QueryError("sql", "give either sql or cql, not both")
    field = texts[0]
    given = [f for f in _TEXT_REPLACES if f in spec]
    if given:
        raise QueryError(
            field, f"give either {field} or {'/'.join(_TEXT_REPLACES)}, not both (found {given})"
        )
    if streams is None:
        raise QueryError(field, "the text names registered streams: give them (replay: --streams FILE)")
    text = spec.pop(field)
    if field == "cql":
        spec.update(parse_cql(text, streams))
        return spec
    # Here, not at the top: the SQL parser pulls in sqlglot, a tenth of a CPU second that every
    # `streamjoin replay` of a JSON query would otherwise pay at start-up.
    from streamjoin.query.sql import parse_sql

    spec.update(parse_sql(text, streams))
    return spec
