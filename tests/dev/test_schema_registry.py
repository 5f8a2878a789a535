"""The embedded schema registry (Apicurio Registry) and streamjoin's client against its Confluent API.

The client's three calls (register, schema by id, latest of a subject) and its errors are checked
against the real registry the `schema_registry` fixture runs, under its `/apis/ccompat/v7` prefix.
`streamjoin dev up --schema-registry` is run by tests/docs/test_formats_md.py, through the Avro
walk-through of docs/formats.md.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamjoin.dev import schema_registry as embedded
from streamjoin.dev.jars import JarsUnavailableError
from streamjoin.schema_registry import HttpSchemaRegistry, SchemaNotFound, SchemaRegistryError


def _record(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "order", "fields": [{"name": "ts", "type": "long"}, *fields]}


def test_the_url_is_the_confluent_api_on_loopback(schema_registry: str) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/apis/ccompat/v7", schema_registry)
    assert httpx.get(f"{schema_registry}/subjects", timeout=10).status_code == 200


def test_register_is_idempotent_and_ids_give_the_schemas_back(schema_registry: str) -> None:
    client = HttpSchemaRegistry(schema_registry)
    subject = f"orders.{uuid.uuid4().hex[:8]}-value"
    v1 = _record()
    v2 = _record({"name": "note", "type": "string", "default": ""})
    first = client.register(subject, v1)
    assert client.register(subject, v1) == first
    second = client.register(subject, v2)
    assert second != first
    assert client.schema(first) == v1
    assert client.schema(second) == v2
    assert client.latest(subject) == (second, v2)


def test_unknown_ids_and_subjects_are_not_found(schema_registry: str) -> None:
    client = HttpSchemaRegistry(schema_registry)
    with pytest.raises(SchemaNotFound, match="987654"):
        client.schema(987_654)
    with pytest.raises(SchemaNotFound, match="no-such-subject-value"):
        client.latest("no-such-subject-value")


def test_an_incompatible_version_is_refused_as_confluents_registry_would(schema_registry: str) -> None:
    client = HttpSchemaRegistry(schema_registry)
    subject = f"orders.{uuid.uuid4().hex[:8]}-value"
    client.register(subject, _record())
    # A new required field without a default: a reader of the new schema cannot read old records.
    with pytest.raises(SchemaRegistryError, match="Incompatible") as refused:
        client.register(subject, _record({"name": "total", "type": "long"}))
    assert not isinstance(refused.value, SchemaNotFound)


def test_the_registry_reads_no_quarkus_or_apicurio_settings_from_our_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QUARKUS_HTTP_HOST", "0.0.0.0")
    monkeypatch.setenv("APICURIO_STORAGE_KIND", "kafkasql")
    monkeypatch.setenv("STREAMJOIN_KEPT", "1")
    env = embedded._registry_env()
    assert "QUARKUS_HTTP_HOST" not in env and "APICURIO_STORAGE_KIND" not in env
    assert env["STREAMJOIN_KEPT"] == "1"


def test_a_fetched_folder_without_the_runner_jar_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "classpath", lambda name: tmp_path)
    with pytest.raises(JarsUnavailableError, match=r"no \*-runner\.jar"):
        embedded.registry_runner()
    assert "no *-runner.jar" in (embedded.schema_registry_available() or "")
