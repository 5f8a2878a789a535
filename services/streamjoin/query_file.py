"""Read a query file as `streamjoin replay`, `shed-eval` and `backfill` all do: its streams as over REST.

A query file is the query JSON (its inputs maybe as `sql` or `cql` text), a registry record with a
`definition` (what `GET /v1/queries/{name}` shows), or a `.sql`/`.cql` file holding the text alone
(the query is named after the file and writes to `NAME.out`).

Over REST an input takes its topic, timestamp field, key and format from its registered stream
(`streamjoin.query.streams.resolve_inputs`). A file's input that gives its `timestamp` (a field, or
null for the Kafka record timestamp) means the same without a stream; text, and an input that leaves
`timestamp` out, need the declarations of their streams, taken from, in order:

1. `--streams STREAMS.json`: a list of what `POST /v1/streams` takes (or an object by name);
2. the registry of a running stack: Redis at `STREAMJOIN_REDIS_URL` (`streamjoin dev up` prints it);

and without either the file is refused with a message naming the inputs and how to declare them.
When declarations are used, every input is resolved against them, exactly as REST resolves it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamjoin.query import QueryDef, QueryError, parse_query
from streamjoin.query.streams import DeclaredStream, resolve_inputs, streams_from_json, undeclared_inputs
from streamjoin.query.text import expand_text

if TYPE_CHECKING:
    from streamjoin.settings import Settings

__all__ = [
    "QueryFileError",
    "StreamSource",
    "environment_settings",
    "load_query",
    "query_from_cql",
    "read_query",
]

_TEXT_FILES = {".sql": "sql", ".cql": "cql"}
"""Query files that hold the text alone, by suffix."""

_REGISTRY_TIMEOUT_MS = 2_000


class QueryFileError(ValueError):
    """A query file that cannot be used; the message is the one line a command prints."""


@dataclass(frozen=True, slots=True)
class StreamSource:
    """Where a command finds the declarations of a query's streams.

    Attributes:
        streams_file: the `--streams` file, if given (it wins).
        settings: builds the settings whose `redis_url` names the registry (called only when the
            registry is needed, so a replay never depends on the environment otherwise); None: no
            registry is asked.
        prefix: the registry's key prefix (the control plane's `STREAMJOIN_API_REGISTRY_PREFIX`).
    """

    streams_file: Path | None = None
    settings: Callable[[], Settings] | None = None
    prefix: str = "streamjoin:"


def environment_settings() -> Settings:
    """Return the settings of the environment (`STREAMJOIN_*`): where the registry is."""
    from streamjoin.settings import load_settings  # here: pydantic only when the registry is asked

    return load_settings()


def read_query(path: Path) -> dict[str, Any]:
    """Return the query JSON of a query file (see the module doc), not validated yet."""
    try:
        text = path.read_text(encoding="utf-8")
        kind = _TEXT_FILES.get(path.suffix)
        raw: Any = (
            {"name": path.stem, "output": {"topic": f"{path.stem}.out"}, kind: text}
            if kind
            else json.loads(text)
        )
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise QueryFileError(f"{path}: cannot read query: {exc}") from None
    if isinstance(raw, dict) and "definition" in raw and "inputs" not in raw:
        raw = raw["definition"]  # a registry record, as `GET /v1/queries/{name}` shows it
    if not isinstance(raw, dict):
        raise QueryFileError(f"{path}: bad query: query: must be a JSON object")
    return raw


def load_query(path: Path, source: StreamSource = StreamSource()) -> QueryDef:
    """Read a query file and validate it, its streams resolved as REST resolves them (by default
    from no declaration: a query whose inputs all give their `timestamp`).

    Raises:
        QueryFileError: unreadable, undeclared streams, or a bad query (the message names the field).
    """
    return _resolve(read_query(path), source, str(path))


def query_from_cql(text: str, source: StreamSource) -> QueryDef:
    """Return the query of CQL `text` over the declared streams, named "replay" (`replay --cql`)."""
    return _resolve({"name": "replay", "output": {"topic": "replay.out"}, "cql": text}, source, "--cql")


def _resolve(raw: dict[str, Any], source: StreamSource, where: str) -> QueryDef:
    streams, origin = _declarations(raw, source, where)
    try:
        spec = expand_text(raw, streams)
        if streams is not None:
            resolve_inputs(spec, streams)
        return parse_query(spec)
    except QueryError as exc:
        raise QueryFileError(f"{where}: bad query: {exc}{origin}") from None


def _declarations(
    raw: Mapping[str, Any], source: StreamSource, where: str
) -> tuple[Mapping[str, DeclaredStream] | None, str]:
    """Return the declared streams the query needs (None: it needs none) and where they came from."""
    if source.streams_file is not None:
        return _streams_file(source.streams_file), f" (streams of {source.streams_file})"
    text = next((k for k in ("sql", "cql") if k in raw), None)
    missing = undeclared_inputs(raw)
    if text is None and not missing:
        return None, ""
    needs = (
        f"its {text.upper()} text names streams"
        if text is not None
        else f'input(s) {", ".join(map(repr, missing))} give no "timestamp", so they take topic and '
        "timestamp from their registered streams, as over REST"
    )
    if source.settings is None:
        raise QueryFileError(f"{where}: {needs}: give --streams STREAMS.json{_write_timestamp(text)}")
    url = "the registry"
    try:
        settings = source.settings()
        url = settings.redis_url
        streams = _registry_streams(settings, source.prefix)
    except Exception as exc:  # whatever keeps the registry from answering: report it, refuse the file
        raise QueryFileError(
            f"{where}: {needs}: give --streams STREAMS.json (a JSON list of what POST /v1/streams takes), "
            f"or point STREAMJOIN_REDIS_URL at the registry of a running stack (could not read {url}: "
            f"{type(exc).__name__}: {exc}){_write_timestamp(text)}"
        ) from None
    return streams, f" (streams registered at {url})"


def _write_timestamp(text: str | None) -> str:
    if text is not None:
        return ""
    return ', or write "timestamp" in each input (a field, or null for the Kafka record timestamp)'


def _streams_file(path: Path) -> Mapping[str, DeclaredStream]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise QueryFileError(f"{path}: cannot read streams: {exc}") from None
    try:
        return streams_from_json(raw)
    except QueryError as exc:
        raise QueryFileError(f"{path}: bad streams: {exc}") from None


def _registry_streams(settings: Settings, prefix: str) -> Mapping[str, DeclaredStream]:
    """Return the streams registered in the registry of `settings` (Redis), read once."""
    import asyncio

    from streamjoin.registry import RegistryStore  # here: Redis only for a file that needs it

    async def read() -> Mapping[str, DeclaredStream]:
        async with RegistryStore.from_settings(
            settings, prefix=prefix, timeout_ms=_REGISTRY_TIMEOUT_MS
        ) as store:
            return dict((await store.snapshot()).streams)

    return asyncio.run(read())
