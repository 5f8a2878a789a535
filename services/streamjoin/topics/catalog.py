"""The topic catalog: every topic streamjoin uses, declared in one file (`topics/topics.json`).

A `TopicSpec` is the validated declaration of one topic; `load_catalog` reads and checks the file.

>>> catalog = parse_catalog({"topics": [{"name": "a.in", "role": "input", "partitions": 4}]})
>>> catalog["a.in"].partitions
4
>>> parse_catalog({"topics": [{"name": "bad name", "role": "input", "partitions": 4}]})
Traceback (most recent call last):
...
streamjoin.topics.catalog.CatalogError: topics[0].name: 'bad name' is not a legal Kafka topic name: ...
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Literal, TypeAlias, TypeGuard, cast, get_args

import streamjoin
from streamjoin.jsoncheck import json_object
from streamjoin.names import check_topic

__all__ = [
    "SLOTS_TOPIC",
    "CatalogError",
    "TopicCatalog",
    "TopicRole",
    "TopicSpec",
    "default_catalog_path",
    "load_catalog",
    "parse_catalog",
]

TopicRole: TypeAlias = Literal["input", "output", "dead-letter", "internal"]

SLOTS_TOPIC = "streamjoin.joiner.slots"
"""The internal topic whose partitions are the slots the joiners' group assigns (`joiner.worker.slots`):
every joiner subscribes to it and to nothing else; it is never written. Its partition count is a
setting (`joiner_slots`), which the declaration's count gives way to."""

_FIELDS = {"name", "role", "partitions", "replication_factor", "config", "description"}


class CatalogError(ValueError):
    """The topic declaration is invalid; the message names the entry and the problem."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One declared topic."""

    name: str
    role: TopicRole
    partitions: int
    replication_factor: int = -1
    """-1: the broker's default (`default.replication.factor`)."""
    config: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    description: str = ""


@dataclass(frozen=True, slots=True)
class TopicCatalog:
    """Every declared topic, in file order; `catalog[name]` looks one up."""

    topics: tuple[TopicSpec, ...]
    source: Path | None = None

    def __getitem__(self, name: str) -> TopicSpec:
        for spec in self.topics:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def __iter__(self) -> Iterator[TopicSpec]:
        return iter(self.topics)

    def __len__(self) -> int:
        return len(self.topics)

    def by_role(self, role: TopicRole) -> tuple[TopicSpec, ...]:
        """Return the topics of one role."""
        return tuple(spec for spec in self.topics if spec.role == role)

    def with_partitions(self, name: str, partitions: int) -> TopicCatalog:
        """Return this catalog with topic `name` (if declared) at `partitions` partitions: a count a
        setting decides (the joiners' slots, `SLOTS_TOPIC`)."""
        topics = tuple(replace(s, partitions=partitions) if s.name == name else s for s in self.topics)
        return TopicCatalog(topics, source=self.source)


def default_catalog_path() -> Path:
    """Return `topics/topics.json` of the source tree streamjoin runs from, else of the working directory."""
    beside_package = Path(streamjoin.__file__).resolve().parents[2] / "topics" / "topics.json"
    if beside_package.is_file():
        return beside_package
    return Path.cwd() / "topics" / "topics.json"


def load_catalog(path: Path | None = None) -> TopicCatalog:
    """Read and validate the topic declaration at `path` (default: `default_catalog_path()`)."""
    source = path if path is not None else default_catalog_path()
    try:
        raw = json.loads(source.read_text())
    except FileNotFoundError as exc:
        raise CatalogError(
            f"no topic declaration at {source} (set STREAMJOIN_TOPICS_FILE or pass --file)"
        ) from exc
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{source}: not valid JSON: {exc}") from exc
    catalog = parse_catalog(raw)
    return TopicCatalog(catalog.topics, source=source)


def parse_catalog(raw: object) -> TopicCatalog:
    """Validate a decoded declaration (`{"topics": [...]}`) and return the catalog."""
    if not isinstance(raw, dict) or not isinstance(raw.get("topics"), list):
        raise CatalogError('the declaration must be an object with a "topics" list')
    unknown = {key for key in raw if not key.startswith("$")} - {"topics"}
    if unknown:
        raise CatalogError(f"unknown top-level field(s): {sorted(unknown)}")
    specs: list[TopicSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(raw["topics"]):
        spec = _parse_topic(entry, f"topics[{index}]")
        if spec.name in seen:
            raise CatalogError(f"topics[{index}].name: {spec.name!r} is declared twice")
        seen.add(spec.name)
        specs.append(spec)
    return TopicCatalog(tuple(specs))


def _parse_topic(raw: object, where: str) -> TopicSpec:
    entry = json_object(raw, where, _FIELDS, CatalogError)
    name = entry.get("name")
    if not isinstance(name, str):
        raise CatalogError(f"{where}.name: {name!r} is not a legal Kafka topic name")
    try:
        check_topic(name)  # the rule the API and the query parser apply (streamjoin.names)
    except ValueError as exc:
        raise CatalogError(f"{where}.name: {exc}") from None
    role = entry.get("role")
    if role not in get_args(TopicRole):
        raise CatalogError(f"{where}.role: must be one of {list(get_args(TopicRole))}, not {role!r}")
    partitions = entry.get("partitions")
    if not _is_int(partitions) or partitions < 1:
        raise CatalogError(f"{where}.partitions: must be an integer >= 1")
    replication = entry.get("replication_factor", -1)
    if not _is_int(replication) or (replication < 1 and replication != -1):
        raise CatalogError(f"{where}.replication_factor: must be -1 (broker default) or an integer >= 1")
    config = entry.get("config", {})
    if not isinstance(config, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in config.items()
    ):
        raise CatalogError(
            f'{where}.config: must map config names to strings (e.g. {{"retention.ms": "1000"}})'
        )
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise CatalogError(f"{where}.description: must be a string")
    return TopicSpec(
        name=name,
        role=cast(TopicRole, role),
        partitions=partitions,
        replication_factor=replication,
        config=MappingProxyType(dict(config)),
        description=description,
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
