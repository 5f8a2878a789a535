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

from streamjoin.query.cql import CqlStream, Stream, parse_cql
from streamjoin.query.errors import QueryError

__all__ = ["expand_text", "streams_from_json"]

_TEXT_REPLACES = ("inputs", "where", "select", "within", "filter", "shedding", "columns")


def streams_from_json(raw: object) -> dict[str, Stream]:
    """Return the declared streams: a list of `{"name", "topic", "timestamp", "key"}` (what `POST
    /v1/streams` takes) or an object `{"name": {"topic": ..., "timestamp": ..., "key": ...}}`; the
    topic defaults to the name, `timestamp` and `key` (the field the topic is partitioned by) to none.

    >>> streams_from_json([{"name": "a", "timestamp": "ts"}]) == streams_from_json({"a": {"timestamp": "ts"}})
    True
    """
    if isinstance(raw, list):
        items: list[tuple[str, object]] = []
        for i, item in enumerate(raw):
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                raise QueryError(f"streams[{i}]", 'must be an object with a string "name"')
            items.append((item["name"], {k: v for k, v in item.items() if k != "name"}))
    elif isinstance(raw, Mapping):
        items = [(str(name), spec) for name, spec in raw.items()]
    else:
        raise QueryError("streams", 'must be a list of {"name", "topic", "timestamp"} or an object by name')
    streams: dict[str, Stream] = {}
    for name, spec in items:
        if not isinstance(spec, Mapping) or set(spec) - {"topic", "timestamp", "key"}:
            raise QueryError(f"streams.{name}", 'must be {"topic": ..., "timestamp": ..., "key": ...}')
        topic, timestamp, key = spec.get("topic", name), spec.get("timestamp"), spec.get("key")
        if not isinstance(topic, str) or not all(v is None or isinstance(v, str) for v in (timestamp, key)):
            raise QueryError(f"streams.{name}", "topic, timestamp and key must be strings")
        if name in streams:
            raise QueryError(f"streams.{name}", f"stream {name!r} is declared twice")
        streams[name] = Stream(topic, timestamp, key)
    return streams


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
