"""What a schema registry offers the formats: register a schema, read one by id or by subject."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["RegistryUnavailable", "SchemaNotFound", "SchemaRegistry", "SchemaRegistryError", "subject_of"]


class SchemaRegistryError(Exception):
    """The registry refused a request (an invalid or incompatible schema, ...)."""


class SchemaNotFound(SchemaRegistryError):
    """No schema has that id, or the subject has no version."""


class RegistryUnavailable(SchemaRegistryError):
    """The registry could not be reached or answered with a server error: retry later."""


def subject_of(topic: str) -> str:
    """Return the subject of a topic's record values (Confluent's TopicNameStrategy).

    >>> subject_of("orders")
    'orders-value'
    """
    return f"{topic}-value"


class SchemaRegistry(Protocol):
    """A store of Avro schemas by id and by subject (versions)."""

    def register(self, subject: str, schema: Mapping[str, Any]) -> int:
        """Register `schema` under `subject` (a no-op when it is there already); return its id."""
        ...

    def schema(self, schema_id: int) -> Mapping[str, Any]:
        """Return the schema with id `schema_id`.

        Raises:
            SchemaNotFound: no schema has that id.
            RegistryUnavailable: the registry cannot tell now.
        """
        ...

    def latest(self, subject: str) -> tuple[int, Mapping[str, Any]]:
        """Return the id and the schema of the latest version under `subject`."""
        ...
