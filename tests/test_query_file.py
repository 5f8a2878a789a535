"""A query file means on every path what it means over REST (`streamjoin.query_file`).

`streamjoin replay` and `shed-eval` (the back-fill's refusals are in tests/backfill/test_cli.py) take
the streams of a query written as for REST from `--streams` (what `POST /v1/streams` takes) or the
registry, with results equal to the oracle's over the resolved query; without either they refuse,
naming the inputs and the ways to declare them, and a replay that replays nothing says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamjoin.dev.ports import free_port
from streamjoin.query import parse_query
from streamjoin.registry import RegistryStore, StreamRecord
from streamjoin.testing import ResultKey, expected_results, replay_events

# As registered over REST: the inputs name streams only; the streams give topic and timestamp field.
REST_QUERY: dict[str, Any] = {
    "name": "paid",
    "inputs": [
        {"stream": "orders", "window": {"range": 40}},
        {"stream": "payments", "window": {"rows": 3}},
        {"stream": "shipments", "window": {"range": 60}},
    ],
    "where": [["orders.id", "=", "payments.order"], ["orders.id", "=", "shipments.order"]],
    "output": {"topic": "paid.out"},
}
STREAMS = [
    {"name": "orders", "topic": "shop.orders", "timestamp": "t", "key": "id", "description": "orders"},
    {"name": "payments", "topic": "shop.payments", "timestamp": "t", "expected_rate": 10},
    {"name": "shipments", "topic": "shop.shipments", "timestamp": "t", "record_bytes": 100},
]
# What REST resolves the query to (and the registry stores): the oracle's query.
RESOLVED = {
    **REST_QUERY,
    "inputs": [
        {**inp, "topic": s["topic"], "timestamp": s["timestamp"]}
        for inp, s in zip(REST_QUERY["inputs"], STREAMS, strict=True)
    ],
}
RESOLVED["inputs"][0]["key"] = "id"


def _lines(seed: int = 3, count: int = 300) -> list[tuple[str, dict[str, Any]]]:
    """Events whose timestamp is the field `t` (a Kafka-timestamp reading would find none)."""
    rng = random.Random(seed)
    out: list[tuple[str, dict[str, Any]]] = []
    t = 0
    for n in range(count):
        t += rng.randint(0, 3)
        stream = rng.choice(["orders", "payments", "shipments"])
        key = "id" if stream == "orders" else "order"
        out.append((stream, {"t": t, key: rng.randint(1, 6), "n": n}))
    return out


def _events_text(lines: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(json.dumps({"stream": s, "record": r}) + "\n" for s, r in lines)


def _command() -> list[str]:
    return [sys.executable, "-c", "from streamjoin.cli.main import main; main()"]


def _run(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, query: Any = REST_QUERY
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "q.json").write_text(json.dumps(query), encoding="utf-8")
    (tmp_path / "streams.json").write_text(json.dumps(STREAMS), encoding="utf-8")
    if not (tmp_path / "e.jsonl").exists():
        (tmp_path / "e.jsonl").write_text(_events_text(_lines()), encoding="utf-8")
    # No registry unless a test names one: a port nothing listens on.
    environment = {**os.environ, "STREAMJOIN_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", **(env or {})}
    return subprocess.run(
        [*_command(), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=environment
    )


def _keys(stdout: str) -> Counter[ResultKey]:
    """Return the results on stdout as oracle keys (each component's partition and offset)."""
    names = [i["stream"] for i in REST_QUERY["inputs"]]
    keys: Counter[ResultKey] = Counter()
    for line in stdout.splitlines():
        ids = json.loads(line)["id"].split("|")  # `topic:partition:offset` of each component
        parts = [i.rsplit(":", 2) for i in ids]
        assert [p[0] for p in parts] == [s["topic"] for s in STREAMS], line  # the declared topics
        assert len(parts) == len(names)
        keys[tuple((int(p[1]), int(p[2])) for p in parts)] += 1
    return keys


def _oracle() -> Counter[ResultKey]:
    query = parse_query(RESOLVED)
    return expected_results(query, replay_events(query, _lines()))


def test_without_streams_or_registry_the_query_is_refused_naming_what_is_missing(tmp_path: Path) -> None:
    done = _run(tmp_path, "replay", "q.json", "e.jsonl")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1, message
    for needle in ("'orders', 'payments', 'shipments'", '"timestamp"', "--streams STREAMS.json",
                   "POST /v1/streams", "STREAMJOIN_REDIS_URL", "could not read redis://"):  # fmt: skip
        assert needle in message, message
    shed = _run(tmp_path, "shed-eval", "q.json", "e.jsonl", "--memory", "6")
    assert shed.returncode == 2 and "--streams STREAMS.json" in shed.stderr, shed.stderr


def test_with_streams_the_results_are_the_oracles_over_the_resolved_query(tmp_path: Path) -> None:
    done = _run(tmp_path, "replay", "--streams", "streams.json", "q.json", "e.jsonl")
    assert done.returncode == 0, done.stderr
    want = _oracle()
    assert want and _keys(done.stdout) == want
    # The query as REST stores it (topics and timestamps spelled out) needs no declaration at all.
    spelled = _run(tmp_path, "replay", "q.json", "e.jsonl", query=RESOLVED)
    assert spelled.returncode == 0 and _keys(spelled.stdout) == want, spelled.stderr
    shed = _run(tmp_path, "shed-eval", "--streams", "streams.json", "q.json", "e.jsonl", "--memory", "600",
                "--json")  # fmt: skip
    assert shed.returncode == 0, shed.stderr
    assert json.loads(shed.stdout)["exact"]["results"] == sum(want.values())


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (
            {"streams": STREAMS[:2]},
            "inputs[2].stream: unknown stream 'shipments'; registered streams: ['orders', 'payments']",
        ),
        (
            {
                "query": {
                    **REST_QUERY,
                    "inputs": [{**REST_QUERY["inputs"][0], "topic": "orders"}, *REST_QUERY["inputs"][1:]],
                }
            },
            "inputs[0].topic: stream 'orders' is registered on topic 'shop.orders'",
        ),
        (
            {
                "query": {
                    **REST_QUERY,
                    "inputs": [{**REST_QUERY["inputs"][0], "timestamp": None}, *REST_QUERY["inputs"][1:]],
                }
            },
            "inputs[0].timestamp: stream 'orders' is registered with timestamp 't'",
        ),
        (
            {"streams": [{**STREAMS[0], "format": "xml"}, *STREAMS[1:]]},
            'streams.orders.format: must be "json"',
        ),
        ({"streams": [{**STREAMS[0], "colour": 1}, *STREAMS[1:]]}, "unknown: ['colour']"),
    ],
)
def test_streams_that_do_not_fit_are_refused_as_rest_refuses_them(
    tmp_path: Path, change: dict[str, Any], needle: str
) -> None:
    (tmp_path / "s2.json").write_text(json.dumps(change.get("streams", STREAMS)), encoding="utf-8")
    done = _run(tmp_path, "replay", "--streams", "s2.json", "q.json", "e.jsonl",
                query=change.get("query", REST_QUERY))  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert needle in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_replay_that_replays_nothing_says_so_and_fails(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_text("\n", encoding="utf-8")
    empty = _run(tmp_path, "replay", "--streams", "streams.json", "q.json", "e.jsonl")
    assert empty.returncode == 1 and empty.stdout == ""
    assert "nothing replayed: e.jsonl: it holds no events" in empty.stderr, empty.stderr
    # The Kafka timestamp written out, with events that carry none: every record is malformed.
    kafka_time = {**RESOLVED, "inputs": [{**i, "timestamp": None} for i in RESOLVED["inputs"]]}
    (tmp_path / "e.jsonl").write_text(_events_text(_lines(count=20)), encoding="utf-8")
    none = _run(tmp_path, "replay", "q.json", "e.jsonl", query=kafka_time)
    assert none.returncode == 1 and none.stdout == ""
    assert "no Kafka timestamp and no timestamp field configured" in none.stderr
    assert none.stderr.strip().splitlines()[-1] == (
        "streamjoin replay: nothing replayed: e.jsonl: every record was malformed (20)"
    )


def test_the_streams_come_from_the_registry_of_a_running_stack(redis_server: str, tmp_path: Path) -> None:
    prefix = f"test-{uuid.uuid4().hex[:10]}:streamjoin:"

    async def register() -> None:
        async with RegistryStore(redis_server, prefix=prefix) as store:
            for s in STREAMS:
                await store.create_stream(
                    StreamRecord(name=s["name"], topic=s["topic"], timestamp=s["timestamp"], key=s.get("key"))
                )

    asyncio.run(register())
    env = {"STREAMJOIN_REDIS_URL": redis_server}
    done = _run(tmp_path, "replay", "--registry-prefix", prefix, "q.json", "e.jsonl", env=env)
    assert done.returncode == 0, done.stderr
    assert _keys(done.stdout) == _oracle()
    other = f"test-{uuid.uuid4().hex[:10]}:streamjoin:"  # a registry without these streams
    refused = _run(tmp_path, "replay", "--registry-prefix", other, "q.json", "e.jsonl", env=env)
    assert refused.returncode == 2, refused.stderr
    assert "unknown stream 'orders'; registered streams: none" in refused.stderr
    assert f"(streams registered at {redis_server})" in refused.stderr
