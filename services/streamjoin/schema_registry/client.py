"""The Confluent Schema Registry REST API (also served by Karapace, Redpanda and Apicurio's ccompat).

Only `schemas/ids/{id}`, `subjects/{subject}/versions` (POST) and
`subjects/{subject}/versions/latest` are used; bodies are `application/vnd.schemaregistry.v1+json`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from streamjoin.schema_registry.base import RegistryUnavailable, SchemaNotFound, SchemaRegistryError

__all__ = ["HttpSchemaRegistry", "registry_at"]

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_NOT_FOUND = frozenset({40401, 40402, 40403})
"""Confluent error codes: subject, version, schema not found."""


class HttpSchemaRegistry:
    """A registry reached at `url` (e.g. `http://127.0.0.1:8081`, or Apicurio's `.../apis/ccompat/v7`).

    Blocking calls with a short timeout: the joiner asks once per schema id it has not seen (the
    formats cache schemas by id), so a call is rare and a slow registry fails the attempt, which the
    operator retries, instead of stalling it.
    """

    def __init__(self, url: str, *, timeout_s: float = 5.0) -> None:
        self.url = url.rstrip("/")
        self._client = httpx.Client(base_url=self.url, timeout=timeout_s, headers={"Accept": _CONTENT_TYPE})

    def close(self) -> None:
        """Close the connections."""
        self._client.close()

    def register(self, subject: str, schema: Mapping[str, Any]) -> int:
        """Register `schema` (Avro) under `subject`; return its id (the same one when registered)."""
        body = {"schema": json.dumps(schema, separators=(",", ":"))}
        answer = self._call(
            "POST",
            f"/subjects/{quote(subject, safe='')}/versions",
            content=json.dumps(body),
            headers={"Content-Type": _CONTENT_TYPE},
        )
        return int(answer["id"])

    def schema(self, schema_id: int) -> Mapping[str, Any]:
        """Return the schema with id `schema_id`."""
        answer = self._call("GET", f"/schemas/ids/{int(schema_id)}")
        return _schema_of(answer)

    def latest(self, subject: str) -> tuple[int, Mapping[str, Any]]:
        """Return the id and the schema of the latest version under `subject`."""
        answer = self._call("GET", f"/subjects/{quote(subject, safe='')}/versions/latest")
        return int(answer["id"]), _schema_of(answer)

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise RegistryUnavailable(f"schema registry {self.url}: {exc}") from exc
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if not isinstance(answer, dict):
            answer = {}
        if response.status_code >= 500:
            raise RegistryUnavailable(f"schema registry {self.url}: HTTP {response.status_code} {answer}")
        if response.status_code >= 400:
            message = f"{answer.get('message') or response.reason_phrase} ({method} {path})"
            if response.status_code == 404 or answer.get("error_code") in _NOT_FOUND:
                raise SchemaNotFound(message)
            raise SchemaRegistryError(message)
        return answer


def _schema_of(answer: Mapping[str, Any]) -> Mapping[str, Any]:
    schema_type = answer.get("schemaType", "AVRO")
    if schema_type != "AVRO":
        raise SchemaRegistryError(f"schema is {schema_type}, not AVRO")
    parsed = json.loads(answer["schema"])
    return parsed if isinstance(parsed, dict) else {"type": parsed}


@functools.cache
def registry_at(url: str | None) -> HttpSchemaRegistry | None:
    """Return the client of the registry at `url`, one per process; None when no URL is set."""
    return HttpSchemaRegistry(url) if url else None
