"""`/v1/queries` with a SQL select list: the stored `columns`, a derived Avro schema, and its 422s."""

from __future__ import annotations

from typing import Any

from .server import ApiServer
from .test_formats_api import ORDERS, formats

__all__ = ["formats"]

SQL = (
    "SELECT x.id AS order_id, x.total * 1.2 AS gross, abs(y.id) AS aid, y.*, x.total > 10 AS big "
    "FROM o [RANGE 5] AS x JOIN p [RANGE 5] AS y ON x.id = y.id"
)


def _body(sql: str, output: dict[str, Any]) -> dict[str, Any]:
    return {"name": "q1", "sql": sql, "output": output}


def test_select_list_stored_and_its_avro_schema_derived(formats: ApiServer) -> None:
    api = formats
    created = api.client.post("/v1/queries", json=_body(SQL, {"topic": "q1.out", "format": "avro"}))
    assert created.status_code == 201, created.text
    definition = api.anon.get("/v1/queries/q1").json()["definition"]
    assert [c.get("name", c.get("star")) for c in definition["columns"]] == [
        "order_id",
        "gross",
        "aid",
        "p",
        "big",
    ]
    assert definition["select"] is None and api.anon.get("/v1/queries/q1").json()["cql"] == ""
    fields = [(f["name"], f["type"]) for f in definition["output"]["schema"]["fields"]]
    total = next(f["type"] for f in ORDERS["fields"] if f["name"] == "total")
    assert total == "double"
    assert fields == [
        ("query", "string"),
        ("ts", ["long", "double"]),
        ("id", "string"),
        ("order_id", ["null", "long"]),  # o's Avro schema
        ("gross", ["null", "long", "double"]),  # an arithmetic result
        ("aid", ["null", "long", "double"]),
        ("p_id", ["null", "long"]),  # p's JSON Schema (as stored, keys sorted): integer
        ("p_ts", ["null", "double"]),  # number
        ("big", ["null", "boolean"]),
    ]


def test_bad_select_lists_are_422s_and_change_nothing(formats: ApiServer) -> None:
    api = formats
    version = api.call("version")
    cases = [
        (SQL.replace("x.total * 1.2", "count(x.total)"), "aggregate function 'count'", "sql"),
        (SQL.replace("abs(y.id)", "lower(7)"), "lower() takes a string", "sql"),
        (SQL.replace("x.total * 1.2", "x.nope * 1.2"), "unknown field 'nope'", "columns[1]"),
        (
            SQL.replace("FROM o [RANGE 5] AS x JOIN p", "FROM o [RANGE 5] AS x JOIN n"),
            "no schema",
            "output.schema",
        ),
    ]
    for sql, needle, field in cases:
        response = api.client.post("/v1/queries", json=_body(sql, {"topic": "q1.out", "format": "avro"}))
        assert response.status_code == 422, response.text
        assert needle in response.json()["detail"] and response.json()["field"] == field, response.text
    assert api.call("version") == version
    assert api.anon.get("/v1/queries").json() == []
