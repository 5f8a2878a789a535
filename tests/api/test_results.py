"""`/v1/queries/{name}/results` against the real embedded broker: NDJSON and SSE, latest/earliest/time."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer

from .server import ApiServer

MakeTopic = Callable[..., str]
_LOG = logging.getLogger("tests.librdkafka")


def produce(bootstrap: str, topic: str, values: list[dict[str, Any]]) -> None:
    """Write `values` as JSON records (what a joiner's output looks like) and wait for the acks."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "logger": _LOG})
    for i, value in enumerate(values):
        producer.produce(topic, key=str(i).encode(), value=json.dumps(value).encode())
    assert producer.flush(15) == 0


def result(n: int) -> dict[str, Any]:
    return {"query": "q", "ts": n, "id": f"r{n}", "tuples": {"a": {"k": n}, "b": {"k": n}}}


@pytest.fixture
def output(streams: ApiServer, make_topic: MakeTopic) -> str:
    """Register query `q` whose output topic exists (2 partitions); return the topic."""
    topic = make_topic("results", partitions=2)
    body = {
        "name": "q",
        "cql": "SELECT * FROM a [RANGE 10], c [ROWS 5] WHERE a.k = c.k",
        "output": {"topic": topic},
    }
    assert streams.client.post("/v1/queries", json=body).status_code == 201
    return topic


def test_ndjson_from_earliest(streams: ApiServer, output: str, kafka_broker: str) -> None:
    produce(kafka_broker, output, [result(n) for n in range(5)])
    response = streams.anon.get("/v1/queries/q/results", params={"from": "earliest", "limit": 3})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = response.text.splitlines()
    assert len(lines) == 3 and all(json.loads(line)["query"] == "q" for line in lines)


def test_sse_from_latest_sees_what_is_produced_after_it_started(
    streams: ApiServer, output: str, kafka_broker: str
) -> None:
    produce(kafka_broker, output, [result(100)])  # before the request: not part of "latest"
    params = {"limit": 3, "timeout_ms": 20_000}
    with streams.anon.stream(
        "GET", "/v1/queries/q/results", params=params, headers={"Accept": "text/event-stream"}
    ) as response:
        assert response.status_code == 200  # the answer starts once every partition is positioned
        assert response.headers["content-type"].startswith("text/event-stream")
        produce(kafka_broker, output, [result(n) for n in range(3)])
        events = _sse_events(response.iter_lines())
    assert events[0] == ("positioned", {"query": "q"}, None)
    data = [e[1] for e in events if e[0] == "message"]
    assert sorted(d["ts"] for d in data) == [0, 1, 2]
    assert sorted(e[2] for e in events if e[0] == "message") == ["r0", "r1", "r2"]
    assert events[-1] == ("end", {"query": "q", "reason": "limit", "count": 3}, None)


def test_from_a_timestamp(streams: ApiServer, output: str, kafka_broker: str) -> None:
    produce(kafka_broker, output, [result(1), result(2)])
    time.sleep(0.05)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    produce(kafka_broker, output, [result(3)])
    response = streams.anon.get(
        "/v1/queries/q/results", params={"from": since, "limit": 1, "timeout_ms": 15_000}
    )
    # the first result at or after `since` (a loaded machine may take seconds to read it)
    assert [json.loads(line)["ts"] for line in response.text.splitlines()] == [3]


def test_ends_at_the_timeout(streams: ApiServer, output: str) -> None:
    started = time.monotonic()
    response = streams.anon.get("/v1/queries/q/results", params={"format": "sse", "timeout_ms": 1000})
    assert 0.9 < time.monotonic() - started < 10
    events = _sse_events(iter(response.text.splitlines()))
    assert [e[0] for e in events] == ["positioned", "end"] and events[-1][1]["reason"] == "timeout"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "yesterday"}, "from"),
        ({"from": "\u00b3"}, "from"),  # a digit to str.isdigit, not to int() (found by schemathesis)
        ({"limit": 0}, "limit"),
        ({"limit": 10**9}, "limit"),
        ({"timeout_ms": 0}, "timeout_ms"),
        ({"timeout_ms": 10**9}, "timeout_ms"),
        ({"format": "xml"}, "format"),
    ],
)
def test_bad_parameters_are_422(streams: ApiServer, output: str, params: dict[str, Any], field: str) -> None:
    response = streams.anon.get("/v1/queries/q/results", params=params)
    assert response.status_code == 422 and response.json()["field"] == field


def _sse_events(lines: Any) -> list[tuple[str, Any, str | None]]:
    """Parse SSE lines into (event, data, id) until the `end` event."""
    events: list[tuple[str, Any, str | None]] = []
    name, data, ident = "message", None, None
    for line in lines:
        if line.startswith(":"):
            continue
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("id: "):
            ident = line.removeprefix("id: ")
        elif line.startswith("data: "):
            data = json.loads(line.removeprefix("data: "))
        elif line == "" and data is not None:
            events.append((name, data, ident))
            if name == "end":
                break
            name, data, ident = "message", None, None
    return events
