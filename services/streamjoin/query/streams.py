"""A query's streams: what a declared stream gives the inputs that name it, on every path.

Over REST an input names a registered stream and takes its topic, timestamp field, key and format
from it; `streamjoin replay`, `shed-eval` and `backfill` resolve a query file the same way, from
the registry or from a `--streams` file of the same declarations (`streamjoin.query_file`). This
module is that one resolver.

>>> streams = streams_from_json([{"name": "orders", "topic": "shop.orders", "timestamp": "ts"}])
>>> spec = {"inputs": [{"stream": "orders", "window": {"range": 5}}]}
>>> resolve_inputs(spec, streams), spec["inputs"][0]
(['orders'], {'stream': 'orders', 'window': {'range': 5}, 'topic': 'shop.orders', 'timestamp': 'ts'})
>>> undeclared_inputs({"inputs": [{"stream": "a", "timestamp": None}, {"stream": "b"}]})
['b']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from streamjoin.query.cql import CqlStream
from streamjoin.query.errors import QueryError
from streamjoin.query.grammar import INPUT_FORMATS, InputFormat, one_of

__all__ = [
    "DECLARATION_FIELDS",
    "DeclaredStream",
    "StreamDecl",
    "resolve_inputs",
    "streams_from_json",
    "undeclared_inputs",
]

DECLARATION_FIELDS = frozenset(
    {"topic", "timestamp", "key", "format", "schema", "description", "expected_rate", "record_bytes"}
)
"""What a stream declaration may hold besides its name: the body of `POST /v1/streams`. The query
takes `topic`, `timestamp`, `key` and `format`; the rest serves the control plane only."""


class DeclaredStream(CqlStream, Protocol):
    """What a query's input takes from its stream (a registered `StreamRecord`, a `StreamDecl`):
    the CQL parser's topic, timestamp and key, and the format."""

    @property
    def format(self) -> InputFormat:
        """How record values are encoded."""
        ...


@dataclass(frozen=True, slots=True)
class StreamDecl:
    """A stream declared in a file (`--streams`), for the tools that run without the control plane."""

    topic: str
    timestamp: str | None = None
    key: str | None = None
    format: InputFormat = "json"


def streams_from_json(raw: object) -> dict[str, StreamDecl]:
    """Return the declared streams: a list of what `POST /v1/streams` takes (`{"name", "topic",
    "timestamp", "key", "format", "schema", ...}`), or an object `{"name": {"topic": ..., ...}}`.

    The topic defaults to the name, `timestamp` and `key` to none, `format` to `json`.

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
    streams: dict[str, StreamDecl] = {}
    for name, spec in items:
        if not isinstance(spec, Mapping) or set(spec) - DECLARATION_FIELDS:
            unknown = sorted(set(spec) - DECLARATION_FIELDS) if isinstance(spec, Mapping) else []
            raise QueryError(
                f"streams.{name}",
                'must be {"topic", "timestamp", "key", "format", ...} as POST /v1/streams takes'
                + (f" (unknown: {unknown})" if unknown else ""),
            )
        topic, timestamp, key = spec.get("topic", name), spec.get("timestamp"), spec.get("key")
        if not isinstance(topic, str) or not all(v is None or isinstance(v, str) for v in (timestamp, key)):
            raise QueryError(f"streams.{name}", "topic, timestamp and key must be strings")
        form = spec.get("format", "json")
        if form not in INPUT_FORMATS:
            raise QueryError(f"streams.{name}.format", f"must be {one_of(INPUT_FORMATS)}")
        if name in streams:
            raise QueryError(f"streams.{name}", f"stream {name!r} is declared twice")
        streams[name] = StreamDecl(topic, timestamp, key, cast(InputFormat, form))
    return streams


def undeclared_inputs(spec: Mapping[str, Any]) -> list[str]:
    """Return the streams of the inputs that only a declaration completes: those without `timestamp`.

    An input that gives its `timestamp` (a field, or null for the Kafka record timestamp) means the
    same with or without its stream (its topic defaults to the stream's name); one that leaves it out
    takes topic, timestamp, key and format from its stream, as over REST.
    """
    inputs = spec.get("inputs")
    if not isinstance(inputs, list):
        return []
    return [
        str(item.get("stream")) for item in inputs if isinstance(item, Mapping) and "timestamp" not in item
    ]


def resolve_inputs(spec: dict[str, Any], streams: Mapping[str, DeclaredStream]) -> list[str]:
    """Fill each input's topic, timestamp, key and format from its stream; return the streams used.

    A value the query gives must equal its stream's (the stream is where a topic's timestamp and
    key are declared once).

    Raises:
        QueryError: an input names an unknown stream, or contradicts its stream.
    """
    inputs = spec.get("inputs")
    if not isinstance(inputs, list):
        return []
    used: list[str] = []
    resolved: list[Any] = []
    for i, item in enumerate(inputs):
        if not isinstance(item, Mapping):
            resolved.append(item)
            continue
        name = item.get("stream")
        stream = streams.get(name) if isinstance(name, str) else None
        if stream is None or not isinstance(name, str):
            known = sorted(streams) or "none"
            raise QueryError(f"inputs[{i}].stream", f"unknown stream {name!r}; registered streams: {known}")
        resolved.append(_resolved(i, name, dict(item), stream))
        if name not in used:
            used.append(name)
    spec["inputs"] = resolved
    return used


def _resolved(i: int, name: str, entry: dict[str, Any], stream: DeclaredStream) -> dict[str, Any]:
    if entry.setdefault("topic", stream.topic) != stream.topic:
        raise QueryError(f"inputs[{i}].topic", f"stream {name!r} is registered on topic {stream.topic!r}")
    if "timestamp" in entry and entry["timestamp"] != stream.timestamp:
        raise QueryError(
            f"inputs[{i}].timestamp", f"stream {name!r} is registered with timestamp {stream.timestamp!r}"
        )
    entry["timestamp"] = stream.timestamp
    if entry.setdefault("key", stream.key) != stream.key:
        raise QueryError(
            f"inputs[{i}].key",
            f"stream {name!r} is registered with key {stream.key!r} (a topic's key is declared on its "
            "stream)",
        )
    if entry["key"] is None:
        del entry["key"]
    if entry.get("format", stream.format) != stream.format:
        raise QueryError(
            f"inputs[{i}].format", f"stream {name!r} is registered with format {stream.format!r}"
        )
    entry.pop("format", None)
    if stream.format != "json":
        entry["format"] = stream.format
    return entry
