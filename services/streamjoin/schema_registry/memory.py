"""A schema registry held in memory: the unit tests' registry, with the HTTP client's semantics."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from streamjoin.schema_registry.base import SchemaNotFound

__all__ = ["MemorySchemaRegistry"]


class MemorySchemaRegistry:
    """Ids count from 1; one schema (by its canonical JSON) keeps one id across subjects.

    >>> registry = MemorySchemaRegistry()
    >>> registry.register("a-value", {"type": "string"}), registry.register("b-value", {"type": "string"})
    (1, 1)
    >>> registry.latest("a-value")
    (1, {'type': 'string'})
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._schemas: dict[int, Mapping[str, Any]] = {}
        self._subjects: dict[str, list[int]] = {}

    def register(self, subject: str, schema: Mapping[str, Any]) -> int:
        """Register `schema` under `subject`; return its id."""
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
        schema_id = self._ids.setdefault(text, len(self._ids) + 1)
        self._schemas[schema_id] = json.loads(text)
        versions = self._subjects.setdefault(subject, [])
        if schema_id not in versions:
            versions.append(schema_id)
        return schema_id

    def schema(self, schema_id: int) -> Mapping[str, Any]:
        """Return the schema with id `schema_id`."""
        try:
            return self._schemas[schema_id]
        except KeyError:
            raise SchemaNotFound(f"schema id {schema_id} is not in the registry") from None

    def latest(self, subject: str) -> tuple[int, Mapping[str, Any]]:
        """Return the id and the schema of the latest version under `subject`."""
        versions = self._subjects.get(subject)
        if not versions:
            raise SchemaNotFound(f"subject {subject!r} has no schema")
        return versions[-1], self._schemas[versions[-1]]
