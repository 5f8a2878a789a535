"""A SQL select list over REST, run by a real joiner: its output records have exactly the columns.

The API, a `streamjoin joiner` process, the embedded broker and Redis, all real (the `e2e` fixture
of `test_joiner_e2e`). Also: a select list the engine cannot run (an aggregate, a bad type) is a
422 with its position at registration, and changes nothing.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from .server import ApiServer
from .test_joiner_e2e import TAU, _read_topic, _wait, e2e, register_streams
from .test_results import produce

__all__ = ["e2e"]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SQL = (
    "SELECT x.k, x.n * 2 AS twice, upper(y.name) AS name, y.* "
    f"FROM a [RANGE {TAU}] AS x JOIN b [RANGE {TAU}] AS y ON x.k = y.k WHERE x.n BETWEEN 1 AND 3"
)


def test_projected_query_writes_rows_of_its_columns(
    e2e: tuple[ApiServer, dict[str, str]], kafka_broker: str
) -> None:
    api, topics = e2e
    register_streams(api, topics)
    version = api.call("version")
    for text, needle in (
        (SQL.replace("x.n * 2 AS twice", "sum(x.n) AS total"), "aggregate function 'sum' is not supported"),
        (SQL.replace("upper(y.name)", "upper(y.name) * 2"), "'*' takes a number, not a string"),
        (SQL.replace("x.n * 2 AS twice", "x.n AS id"), "column name 'id' is a field of every output row"),
    ):
        bad = api.client.post("/v1/queries", json={"name": "q", "sql": text, "output": {"topic": "o"}})
        assert bad.status_code == 422, bad.text
        assert needle in bad.text and "at position" in bad.text, bad.text
    assert api.call("version") == version
    query = {"name": "q", "sql": SQL, "output": {"topic": topics["out"]}}
    created = api.client.post("/v1/queries", json=query)
    assert created.status_code == 201, created.text
    assert [c.get("name", c.get("star")) for c in created.json()["definition"]["columns"]] == [
        "a_k",
        "twice",
        "name",
        "b",
    ]
    _wait(api, lambda q: q["status"] == "running", "the query to run")
    produce(kafka_broker, topics["a"], [{"k": k, "ts": 1_000 + k, "n": k} for k in range(1, 6)])
    time.sleep(1)  # arrival order = timestamp order across the inputs
    produce(kafka_broker, topics["b"], [{"k": k, "ts": 1_010 + k, "name": f"n{k}"} for k in range(1, 6)])
    out = asyncio.run(_read_topic(kafka_broker, topics["out"], 3))
    assert sorted((o["row"] for o in out), key=lambda r: r["a_k"]) == [
        {"a_k": k, "twice": 2 * k, "name": f"N{k}", "b_ts": 1_010 + k, "b_k": k, "b_name": f"n{k}"}
        for k in (1, 2, 3)  # n BETWEEN 1 AND 3
    ]
    assert all(set(o) == {"query", "ts", "row", "id"} for o in out)
