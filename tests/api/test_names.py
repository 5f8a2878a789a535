"""Names as Kafka and docs/registry.md define them, one rule for the API, the query parser and the
topic catalog: a topic `..` or a 10,000-character field name is a 4xx naming the problem, and
changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin.names import FIELD_MAX, TOPIC_MAX
from streamjoin.query import QueryError, parse_query
from streamjoin.topics.catalog import CatalogError, parse_catalog

from .server import ApiServer

LONG = "x" * 10_000


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"name": "s", "topic": ".."}, "topic", 'Kafka refuses "." and ".."'),
        ({"name": "s", "topic": "."}, "topic", 'Kafka refuses "." and ".."'),
        ({"name": "s", "topic": "t" * (TOPIC_MAX + 1)}, "topic", "1 to 249 characters"),
        ({"name": "s", "topic": "t", "timestamp": LONG}, "timestamp", "at most 255"),
        ({"name": "s", "topic": "t", "key": "k" * (FIELD_MAX + 1)}, "key", "at most 255"),
        (
            {"name": "s", "topic": "t", "schema": {"properties": {LONG: {}}}},
            "schema",
            "at most 255 characters",
        ),
        ({"name": "s" * 65, "topic": "t"}, "name", "pattern"),
    ],
)
def test_a_stream_with_an_illegal_name_is_refused(
    api: ApiServer, body: dict[str, Any], field: str, says: str
) -> None:
    before = api.dump()
    response = api.client.post("/v1/streams", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and says in response.json()["detail"], response.json()
    assert LONG not in response.text  # the problem is named, the name is not echoed whole
    assert api.dump() == before


def test_the_longest_legal_names_are_accepted(api: ApiServer) -> None:
    body = {"name": "s" * 64, "topic": "t" * TOPIC_MAX, "timestamp": "f" * FIELD_MAX, "key": "k" * FIELD_MAX}
    assert api.client.post("/v1/streams", json=body).status_code == 201
    assert api.client.post("/v1/streams", json={"name": "dots", "topic": "..."}).status_code == 201


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"output": {"topic": ".."}}, "output.topic"),
        ({"dead_letter": {"topic": "."}}, "dead_letter.topic"),
        ({"where": [["a.k", "=", f"b.{LONG}"]]}, "where[0][2]"),
        ({"select": [f"a.{LONG}"]}, "select[0]"),
        ({"cql": f"SELECT * FROM a [RANGE 10], b [RANGE 10] WHERE a.k = b.{LONG}"}, "where[0][2]"),
    ],
)
def test_a_query_with_an_illegal_name_is_refused(
    streams: ApiServer, change: dict[str, Any], field: str
) -> None:
    api = streams
    body: dict[str, Any] = {
        "name": "q",
        "inputs": [{"stream": "a", "window": {"range": 10}}, {"stream": "b", "window": {"range": 10}}],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "q.out"},
    }
    if "cql" in change:
        del body["inputs"], body["where"]
    before = api.dump()
    response = api.client.post("/v1/queries", json={**body, **change})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field, response.json()
    assert LONG not in response.text
    assert api.dump() == before


def test_the_catalog_and_a_query_file_apply_the_same_rules() -> None:
    for bad in ("..", ".", "t" * (TOPIC_MAX + 1), "a b"):
        with pytest.raises(CatalogError, match="is not a legal Kafka topic name"):
            parse_catalog({"topics": [{"name": bad, "role": "input", "partitions": 1}]})
    query = {
        "name": "q",
        "inputs": [
            {"stream": "a", "topic": "..", "window": {"range": 5}},
            {"stream": "b", "window": {"rows": 2}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "o"},
    }
    with pytest.raises(QueryError, match="Kafka refuses") as refused:
        parse_query(query)
    assert refused.value.field == "inputs[0].topic"
    query["inputs"][0] = {"stream": "a", "timestamp": LONG, "window": {"range": 5}}
    with pytest.raises(QueryError, match="at most 255 characters") as refused:
        parse_query(query)
    assert refused.value.field == "inputs[0].timestamp"
