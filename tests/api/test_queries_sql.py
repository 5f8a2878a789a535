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


def test_sql_as_people_write_it(streams: ApiServer) -> None:
    """A stream named like a keyword, aliases in WITHIN, Flink's and ksqlDB's bounded joins."""
    api = streams
    temp = {"name": "temp", "topic": "net.temp", "timestamp": "ts"}
    assert api.client.post("/v1/streams", json=temp).status_code == 201
    for name, text, within in (
        (
            "flink",
            "SELECT * FROM temp t JOIN a x ON t.src = x.src "
            "AND t.ts BETWEEN x.ts - INTERVAL '10' SECOND AND x.ts + INTERVAL '10' SECOND",
            [["temp", "a", 10_000]],
        ),
        ("ksql", "SELECT * FROM a x JOIN b y WITHIN 5 SECONDS ON x.src = y.src", [["a", "b", 5_000]]),
        ("aliased", "SELECT * FROM a x, c y WITHIN (x, y) 3 WHERE x.src = y.src", [["a", "c", 3]]),
    ):
        body = {"name": name, "sql": text, "output": {"topic": f"{name}.out"}}
        response = api.client.post("/v1/queries", json=body)
        assert response.status_code == 201, response.text
        assert response.json()["definition"]["within"] == within


def test_sql_mistakes_are_a_422_with_the_position_and_change_nothing(streams: ApiServer) -> None:
    api = streams
    before = api.dump()
    for text, detail, position in (
        ("SELEC * FROM a x, b y WHERE x.src = y.src", "unknown keyword 'SELEC' (did you mean SELECT?)", 0),
        ("SELECT * FROM a x JION b y ON x.src = y.src", "unknown keyword 'JION' (did you mean JOIN?)", 18),
        ("SELECT * FROM a [RANGE 5 x JOIN b [ROWS 2] y ON x.src = y.src", "expected ']', found 'x'", 25),
        (
            "SELECT * FROM a [RANGE 5 WEEKS] x, b [ROWS 2] y WHERE x.src = y.src",
            "unknown time unit 'WEEKS'",
            25,
        ),
        (
            "SELECT * FROM a x JOIN b y WITHIN 1 HOURS ON x.src = y.src "
            "JOIN c z WITHIN 2 HOURS ON z.src = x.src",
            "e.g. WITHIN (x, z) 2 HOURS",
            68,
        ),
    ):
        response = api.client.post("/v1/queries", json={"name": "bad", "sql": text, "output": {"topic": "o"}})
        assert response.status_code == 422, response.text
        error = response.json()
        assert error["field"] == "sql" and error["position"] == position, error
        assert detail in error["detail"] and f"at position {position} " in error["detail"], error
    assert api.dump() == before
