"""A whole query from CQL text and a streams declaration, without a registry (`streamjoin replay --cql`).

The streams declaration is what `POST /v1/streams` takes, as a JSON list: each stream's `name`,
`topic` and `timestamp` field (null or absent: the Kafka record timestamp; in a replay, the
`ts` of each events line is then required).

>>> streams = streams_from_json([{"name": "a", "topic": "t.a", "timestamp": "ts"},
...                              {"name": "b", "topic": "t.b", "timestamp": "ts"}])
>>> q = cql_query("SELECT * FROM a [RANGE 10], b [ROWS 2] WHERE a.k = b.k", streams)
>>> q.name, q.stream_names, q.output_topic
('replay', ('a', 'b'), 'replay.out')
"""

from __future__ import annotations

from collections.abc import Mapping

from streamjoin.query.cql import Stream, parse_cql
from streamjoin.query.model import QueryDef
from streamjoin.query.parse import QueryError, parse_query

__all__ = ["cql_query", "streams_from_json"]


def streams_from_json(raw: object) -> dict[str, Stream]:
    """Return the streams of a declaration (a JSON list of `{"name", "topic", "timestamp"}`) by name.

    Raises:
        QueryError: the declaration is not such a list (field `streams`).
    """
    if not isinstance(raw, list):
        raise QueryError("streams", 'must be a list of {"name", "topic", "timestamp"} objects')
    streams: dict[str, Stream] = {}
    for i, item in enumerate(raw):
        where = f"streams[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise QueryError(where, 'must be an object with a string "name"')
        name, topic, ts = item["name"], item.get("topic", item["name"]), item.get("timestamp")
        if not isinstance(topic, str) or not (ts is None or isinstance(ts, str)):
            raise QueryError(where, '"topic" must be a string and "timestamp" a string or null')
        if name in streams:
            raise QueryError(where, f"stream {name!r} is declared twice")
        streams[name] = Stream(topic, ts)
    return streams


def cql_query(
    text: str, streams: Mapping[str, Stream], *, name: str = "replay", output: str = "replay.out"
) -> QueryDef:
    """Return the validated query of CQL `text` over `streams`, named `name`, writing to `output`.

    Raises:
        QueryError: the text or the query it makes is not valid (`CqlError` for the text).
    """
    return parse_query({"name": name, **parse_cql(text, streams), "output": {"topic": output}})
