"""Schemas of Avro records: a Confluent-compatible Schema Registry (REST), and an in-memory one.

The only package that speaks to a registry (docs/formats.md); everything else asks a
`SchemaRegistry` for a schema by id or registers one under a subject.
"""

from streamjoin.schema_registry.base import (
    RegistryUnavailable,
    SchemaNotFound,
    SchemaRegistry,
    SchemaRegistryError,
    subject_of,
)
from streamjoin.schema_registry.client import HttpSchemaRegistry, registry_at
from streamjoin.schema_registry.memory import MemorySchemaRegistry

__all__ = [
    "HttpSchemaRegistry",
    "MemorySchemaRegistry",
    "RegistryUnavailable",
    "SchemaNotFound",
    "SchemaRegistry",
    "SchemaRegistryError",
    "registry_at",
    "subject_of",
]
