"""The control plane's OpenAPI enums are the names the query grammar declares (`streamjoin.query.grammar`).

The schemas use the grammar's `Literal`s, so a name added there reaches the API with no other edit,
and a `Literal` written out again in a schema (which would drift) fails here. No server is started:
the document is built from the app factory alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin.api.config import ApiSettings
from streamjoin.api.main import create_app
from streamjoin.query import grammar


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    """Return the OpenAPI document's component schemas."""
    document: dict[str, Any] = create_app(ApiSettings()).openapi()
    return document["components"]["schemas"]  # type: ignore[no-any-return]


def _names(prop: dict[str, Any]) -> list[str]:
    """Return the string names a property accepts (its `enum` or `const`, inside `anyOf` too)."""
    for option in prop.get("anyOf", [prop]):
        if "enum" in option:
            return list(option["enum"])
        if "const" in option:
            return [option["const"]]
    return []


@pytest.mark.parametrize(
    ("schema", "prop", "declared"),
    [
        ("QueryCreate", "algorithm", grammar.ALGORITHM_NAMES),
        ("QueryUpdate", "algorithm", grammar.ALGORITHM_NAMES),
        ("QueryCreate", "start", grammar.START_NAMES),
        ("QueryCreate", "order", (grammar.AUTO_ORDER,)),
        ("ControlUpdate", "order", (grammar.AUTO_ORDER,)),
        ("ControlsPublic", "order", (grammar.AUTO_ORDER,)),
        ("ModeSpec", "mode", grammar.EVALUATION_MODES),
        ("ExpirationSpec", "mode", grammar.EXPIRATION_MODES),
        ("SheddingSpec", "policy", grammar.POLICY_NAMES),
        ("SheddingSpec", "combine", grammar.COMBINE_NAMES),
        ("InputSpec", "format", grammar.INPUT_FORMATS),
        ("StreamCreate", "format", grammar.INPUT_FORMATS),
        ("StreamPublic", "format", grammar.INPUT_FORMATS),
        ("ResultsSpec", "format", grammar.OUTPUT_FORMATS),
    ],
)
def test_openapi_enum_is_the_declared_set(
    schemas: dict[str, Any], schema: str, prop: str, declared: tuple[str, ...]
) -> None:
    assert _names(schemas[schema]["properties"][prop]) == list(declared)


def test_window_spec_has_a_field_per_window_kind(schemas: dict[str, Any]) -> None:
    assert set(grammar.WINDOW_KINDS) <= set(schemas["WindowSpec"]["properties"])


@pytest.mark.parametrize(
    ("schema", "fields", "api_only"),
    [
        ("QueryCreate", grammar.QUERY_FIELDS, {"cql", "sql", "paused"}),
        ("InputSpec", grammar.INPUT_FIELDS, set()),
        ("WindowSpec", grammar.WINDOW_FIELDS, set()),
        ("ResultsSpec", grammar.OUTPUT_FIELDS, set()),
        ("SheddingSpec", grammar.SHEDDING_FIELDS, set()),
    ],
)
def test_a_body_has_the_fields_the_parser_takes(
    schemas: dict[str, Any], schema: str, fields: frozenset[str], api_only: set[str]
) -> None:
    assert set(schemas[schema]["properties"]) == fields | api_only
