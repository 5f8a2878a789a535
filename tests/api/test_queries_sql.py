"""`/v1/queries` with `sql` text: JOIN ... ON, aliases and a filter, compiled against registered streams."""

from __future__ import annotations

from .server import ApiServer

SQL = (
    "SELECT * FROM a [RANGE 100] AS x JOIN b [ROWS 50] AS y ON x.src = y.src "
    "WHERE x.bytes * 1.2 > y.bytes OR x.meta.tag IN ('web', 'dns')"
)


def test_register_sql_and_read_its_definition(streams: ApiServer) -> None:
    api = streams
    body = {"name": "sq", "sql": SQL, "output": {"topic": "sq.out"}, "algorithm": "nlj"}
    response = api.client.post("/v1/queries", json=body)
    assert response.status_code == 201, response.text
    definition = response.json()["definition"]
    assert definition["where"] == [["a.src", "=", "b.src"]]
    assert definition["algorithm"] == "nlj"
    assert definition["inputs"][1] == {
        "stream": "b",
        "topic": "net.b",
        "timestamp": "ts",
        "window": {"rows": 50},
    }
    assert definition["filter"]["op"] == "or"
    assert definition["filter"]["args"][1] == {
        "op": "in",
        "args": [{"ref": ["a", "meta", "tag"]}, "web", "dns"],
    }
    assert api.anon.get("/v1/queries/sq").json()["definition"] == definition


def test_bad_sql_is_a_422_with_its_position_and_changes_nothing(streams: ApiServer) -> None:
    api = streams
    version = api.call("version")
    for text, needle in (
        ("SELECT * FROM a AS x JOIN b AS y ON x.src = z.src", "at position 44"),
        (
            "SELECT * FROM a [RANGE 1] AS x JOIN b [ROWS 2] AS y ON x.src = y.src WHERE y.nope > 1",
            "unknown field 'nope'",
        ),
        ("SELECT * FROM a AS x JOIN b AS y ON x.src = y.src WHERE x.n >", "sql: incomplete expression"),
    ):
        response = api.client.post("/v1/queries", json={"name": "bad", "sql": text, "output": {"topic": "o"}})
        assert response.status_code == 422, response.text
        assert needle in response.text, response.text
    both = {"name": "bad", "sql": SQL, "cql": "SELECT * FROM a, b", "output": {"topic": "o"}}
    assert api.client.post("/v1/queries", json=both).status_code == 422
    assert api.call("version") == version
    assert api.anon.get("/v1/queries").json() == []
