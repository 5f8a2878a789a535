"""The registry's durable log: every stream and query (with its controls) as one keyed record.

Redis holds the registry the joiners read; this log, a compacted Kafka topic
(`streamjoin.registry`), is its source of truth. The control plane appends an entity's new value
(or a tombstone when it is deleted) and waits for the broker's acknowledgement *before* it commits
the change to Redis, so whatever Redis holds is in the log. When Redis comes back empty (no
`streamjoin:epoch`), `RegistryStore.restore` folds the log (latest record per key wins, a tombstone
deletes) and writes the result back. docs/registry.md, "Durability".

Record key: `<prefix>stream:<name>` or `<prefix>query:<name>` (the registry's Redis key prefix, so
several registries can share one topic). Value: UTF-8 JSON, exactly the strings Redis holds:

- stream: `{"kind": "stream", "name": ..., "record": <the streamjoin:streams value>}`
- query: `{"kind": "query", "name": ..., "record": <the streamjoin:queries value>,
  "controls": <the streamjoin:control:{query} hash>}`

Header `sj-version`: the registry version the change commits (tombstones carry it too).

>>> e = LogEntry.stream("p:", "orders", '{"name":"orders"}')
>>> e.key, LogEntry.tombstone("p:", "query", "q").value is None
('p:stream:orders', True)
>>> state = fold("p:", [e.at(3), LogEntry.tombstone("p:", "stream", "orders").at(4), e.at(5)])
>>> state.streams, state.version
({'orders': '{"name":"orders"}'}, 5)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol, TypeAlias

from streamjoin.registry._json import dumps

__all__ = ["VERSION_HEADER", "EntityKind", "LogEntry", "RegistryLog", "RestoredRegistry", "fold"]

EntityKind: TypeAlias = Literal["stream", "query"]
VERSION_HEADER = "sj-version"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One entity's new value (`value` None: deleted), as appended to and read from the log."""

    key: str
    value: str | None
    version: int = 0

    @classmethod
    def stream(cls, prefix: str, name: str, record: str) -> LogEntry:
        """Return the entry of stream `name` whose stored JSON is `record`."""
        return cls(f"{prefix}stream:{name}", dumps({"kind": "stream", "name": name, "record": record}))

    @classmethod
    def query(cls, prefix: str, name: str, record: str, controls: Mapping[str, str]) -> LogEntry:
        """Return the entry of query `name`: its stored JSON and its control hash."""
        value = {"kind": "query", "name": name, "record": record, "controls": dict(controls)}
        return cls(f"{prefix}query:{name}", dumps(value))

    @classmethod
    def tombstone(cls, prefix: str, kind: EntityKind, name: str) -> LogEntry:
        """Return the entry that deletes entity `name` of `kind`."""
        return cls(f"{prefix}{kind}:{name}", None)

    def at(self, version: int) -> LogEntry:
        """Return this entry stamped with the registry version it commits."""
        return replace(self, version=version)


class RegistryLog(Protocol):
    """Where `RegistryStore` appends registry changes and reads them back (Kafka: `KafkaRegistryLog`)."""

    async def append(self, entries: Sequence[LogEntry]) -> None:
        """Write `entries` in order; return once they are durable (raise if they may not be)."""

    async def read(self) -> list[LogEntry]:
        """Return every retained entry, in the order they were appended for each key."""
        ...


@dataclass(slots=True)
class RestoredRegistry:
    """The registry as the log says it is: stored JSON by name, control hashes, the last version."""

    streams: dict[str, str] = field(default_factory=dict)
    queries: dict[str, str] = field(default_factory=dict)
    controls: dict[str, dict[str, str]] = field(default_factory=dict)
    version: int = 0


def fold(prefix: str, entries: Iterable[LogEntry]) -> RestoredRegistry:
    """Return the registry of `prefix` that `entries` leave: the last entry of each key wins.

    Entries of other prefixes are skipped; a value that is not an entity of this layout raises
    `ValueError` (a corrupt log must stop the restore, not drop entities).
    """
    state = RestoredRegistry()
    for entry in entries:
        if not entry.key.startswith(prefix):
            continue
        state.version = max(state.version, entry.version)
        kind, _, name = entry.key[len(prefix) :].partition(":")
        if kind not in ("stream", "query") or not name:
            raise ValueError(f"registry log key {entry.key!r} names no stream or query")
        if entry.value is None:
            (state.streams if kind == "stream" else state.queries).pop(name, None)
            if kind == "query":
                state.controls.pop(name, None)
            continue
        value = json.loads(entry.value)
        if not isinstance(value, dict) or value.get("kind") != kind or value.get("name") != name:
            raise ValueError(f"registry log record {entry.key!r} does not describe {kind} {name!r}")
        if not isinstance(value.get("record"), str):
            raise ValueError(f"registry log record {entry.key!r} has no stored record")
        if kind == "stream":
            state.streams[name] = value["record"]
        else:
            controls = value.get("controls")
            if not isinstance(controls, dict) or not all(isinstance(v, str) for v in controls.values()):
                raise ValueError(f"registry log record {entry.key!r} has no control hash")
            state.queries[name] = value["record"]
            state.controls[name] = {str(k): v for k, v in controls.items()}
    return state
