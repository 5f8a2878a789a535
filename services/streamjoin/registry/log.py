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

Header `sj-version`: the registry version the change commits (tombstones carry it too); header
`sj-mac`: the record's HMAC (`streamjoin.registry.signing`). A restore skips, and reports, a record
that is not authentic or is no entity of this layout: the log is a topic others may write to.

>>> e = LogEntry.stream("p:", "orders", '{"name":"orders"}')
>>> e.key, LogEntry.tombstone("p:", "query", "q").value is None
('p:stream:orders', True)
>>> state = fold("p:", [e.at(3), LogEntry.tombstone("p:", "stream", "orders").at(4), e.at(5)])
>>> state.streams, state.version
({'orders': '{"name":"orders"}'}, 5)
>>> state = fold("p:", [e.at(3), LogEntry("p:stream:orders", "not json", 9)])
>>> state.streams, state.version, [r.reason for r in state.refused]
({'orders': '{"name":"orders"}'}, 3, ['malformed'])
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, TypeAlias, cast, get_args

from streamjoin.registry._json import dumps

__all__ = [
    "REFUSAL_REASONS",
    "VERSION_HEADER",
    "Authenticator",
    "EntityKind",
    "LogEntry",
    "RefusalReason",
    "RefusedEntry",
    "RegistryLog",
    "RestoredRegistry",
    "fold",
]

EntityKind: TypeAlias = Literal["stream", "query"]
VERSION_HEADER = "sj-version"

RefusalReason: TypeAlias = Literal["unsigned", "bad_signature", "malformed", "invalid"]
"""Why a restore did not take a log record: no MAC, a MAC that does not match, not a registry
entity, or an entity the control plane would refuse to register."""
REFUSAL_REASONS: tuple[RefusalReason, ...] = get_args(RefusalReason)


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One entity's new value (`value` None: deleted), as appended to and read from the log."""

    key: str
    value: str | None
    version: int = 0
    mac: str | None = None
    """The HMAC of key, version and value (`streamjoin.registry.signing`); None: not signed."""

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
        """Return this entry stamped with the registry version it commits (unsigned: sign it after)."""
        return replace(self, version=version, mac=None)


class RegistryLog(Protocol):
    """Where `RegistryStore` appends registry changes and reads them back (Kafka: `KafkaRegistryLog`)."""

    async def append(self, entries: Sequence[LogEntry]) -> None:
        """Write `entries` in order; return once they are durable (raise if they may not be)."""

    async def read(self) -> list[LogEntry]:
        """Return every retained entry, in the order they were appended for each key."""
        ...


@dataclass(frozen=True, slots=True)
class RefusedEntry:
    """A log record a restore did not take, and why (docs/registry.md, "Authentication")."""

    key: str
    version: int
    reason: RefusalReason
    detail: str

    def describe(self) -> str:
        """Return the refusal as one log line's worth of text."""
        return f"{self.key!r} (version {self.version}): {self.reason}: {self.detail}"


class Authenticator(Protocol):
    """Says whether a log entry is authentic (`streamjoin.registry.signing.LogSigner`)."""

    def problem(self, entry: LogEntry) -> tuple[RefusalReason, str] | None:
        """Return why `entry` is not authentic (reason, detail), or None."""
        ...


@dataclass(slots=True)
class RestoredRegistry:
    """The registry as the log says it is: stored JSON by name, control hashes, the last version, and
    the records refused on the way."""

    streams: dict[str, str] = field(default_factory=dict)
    queries: dict[str, str] = field(default_factory=dict)
    controls: dict[str, dict[str, str]] = field(default_factory=dict)
    version: int = 0
    versions: dict[str, int] = field(default_factory=dict)
    """The version of the record each entity's value (or deletion) comes from, by log key."""
    refusals: dict[str, list[RefusedEntry]] = field(default_factory=dict)
    """The refused records of each key since its last accepted one (an accepted record supersedes
    them: they changed nothing), by log key."""

    @property
    def refused(self) -> list[RefusedEntry]:
        """Return the refused records that no accepted record of their key superseded."""
        return [r for refused in self.refusals.values() for r in refused]

    @property
    def unsettled(self) -> set[str]:
        """Return the log keys whose latest record was refused: the log does not say their value."""
        return set(self.refusals)

    def refuse(self, key: str, version: int, reason: RefusalReason, detail: str) -> None:
        """Record that the record of `key` at `version` was not taken."""
        self.refusals.setdefault(key, []).append(RefusedEntry(key, version, reason, detail))

    def accept(self, key: str, version: int) -> None:
        """Record that the record of `key` at `version` gives the key's value (or deletion)."""
        self.refusals.pop(key, None)
        self.versions[key] = version
        self.version = max(self.version, version)


class _Malformed(ValueError):
    """A record that is no registry entity of this layout."""


def fold(
    prefix: str, entries: Iterable[LogEntry], authenticator: Authenticator | None = None
) -> RestoredRegistry:
    """Return the registry of `prefix` that `entries` leave: the last accepted entry of each key wins.

    Entries of other prefixes are skipped. With an `authenticator`, an entry that is not authentic
    is refused (`unsigned`, `bad_signature`) before anything reads it; an entry that is no registry
    entity of this layout is refused as `malformed`. A refused entry changes nothing (the key keeps
    the value of its last accepted entry) and is listed in `refused`: a corrupt or forged record
    must neither stop the restore nor become an entity.
    """
    state = RestoredRegistry()
    for entry in entries:
        if not entry.key.startswith(prefix):
            continue
        problem = authenticator.problem(entry) if authenticator is not None else None
        if problem is not None:
            state.refuse(entry.key, entry.version, *problem)
            continue
        try:
            kind, name, value = _parse(prefix, entry)
        except _Malformed as exc:
            if entry.value is None:  # an authentic delete of a key that is no entity: it holds nothing
                state.accept(entry.key, entry.version)
            else:
                state.refuse(entry.key, entry.version, "malformed", str(exc))
            continue
        state.accept(entry.key, entry.version)
        if value is None:
            (state.streams if kind == "stream" else state.queries).pop(name, None)
            if kind == "query":
                state.controls.pop(name, None)
        elif kind == "stream":
            state.streams[name] = value["record"]
        else:
            state.queries[name] = value["record"]
            state.controls[name] = {str(k): v for k, v in value["controls"].items()}
    return state


def _parse(prefix: str, entry: LogEntry) -> tuple[EntityKind, str, dict[str, Any] | None]:
    """Return the kind, name and value (None: a tombstone) of `entry`; raise `_Malformed`."""
    kind, _, name = entry.key[len(prefix) :].partition(":")
    if kind not in ("stream", "query") or not name:
        raise _Malformed("its key names no stream or query")
    entity = cast(EntityKind, kind)
    if entry.value is None:
        return entity, name, None
    try:
        value = json.loads(entry.value)
    except ValueError as exc:
        raise _Malformed(f"its value is not JSON ({exc})") from None
    if not isinstance(value, dict) or value.get("kind") != kind or value.get("name") != name:
        raise _Malformed(f"its value does not describe {kind} {name!r}")
    if not isinstance(value.get("record"), str):
        raise _Malformed("it has no stored record")
    if kind == "query":
        controls = value.get("controls")
        if not isinstance(controls, dict) or not all(isinstance(v, str) for v in controls.values()):
            raise _Malformed("it has no control hash")
    return entity, name, value
