"""Avro inputs and output through the real broker, Redis and a real schema registry (Apicurio Registry).

Streams `a` and `b` are Avro (Confluent wire format), `c` stays JSON; the output is Avro flat rows
under `<output>-value`, and the worker is SIGKILLed and restarted three times. Half-way, the
producer registers a new compatible writer schema of `a` (an added field with a default) and uses
it: the query goes on. A record framed with an unknown schema id and one whose body does not match
its schema are dead-lettered with their reasons. The result ids must equal the brute-force
oracle's, each exactly once, and each row's fields its components' values. Flat JSON output,
through the same broker and Redis, equals `streamjoin replay --format flat`.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import fastavro
import pytest
from confluent_kafka import Producer
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.formats import AvroReader, frame, result_schema
from streamjoin.query import parse_query
from streamjoin.replay import replay
from streamjoin.schema_registry import HttpSchemaRegistry, subject_of
from streamjoin.testing import Event

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

FIELDS = ("ts", "k", "v", "n")


def _avro(name: str, extra: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    fields = [{"name": f, "type": "long"} for f in FIELDS]
    return {"type": "record", "name": name, "fields": [*fields, *extra]}


def _body(schema: Mapping[str, Any], record: Mapping[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(dict(schema)), dict(record))
    return buffer.getvalue()


def _produce(
    bootstrap: str, topics: Mapping[str, str], items: Sequence[tuple[str, int, Any, bytes]]
) -> list[Event]:
    """Produce (stream, partition, record or None, value bytes); return the events of the records."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    events: list[Event | None] = [None] * len(items)

    def report(i: int, stream: str, record: Any) -> Callable[[Any, Any], None]:
        def cb(err: Any, msg: Any) -> None:
            assert err is None, err
            if record is not None:
                events[i] = Event(stream, msg.partition(), msg.offset(), record["ts"], record)

        return cb

    for i, (stream, p, record, value) in enumerate(items):
        producer.produce(topics[stream], value, partition=p, on_delivery=report(i, stream, record))
        producer.poll(0)
    assert producer.flush(60) == 0
    return [e for e in events if e is not None]


def test_avro_inputs_and_output_with_schema_evolution(
    query_setup: Callable[[int], QuerySetup],
    make_topic: Callable[..., str],
    kafka_broker: str,
    redis_server: str,
    schema_registry: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = query_setup(2)
    dead_topic = make_topic("dead", partitions=2)
    registry = HttpSchemaRegistry(schema_registry)
    v1 = {n: _avro(f"rec_{n}") for n in "ab"}
    v2 = _avro("rec_a", [{"name": "note", "type": "string", "default": ""}])
    ids = {n: registry.register(subject_of(s.topics[n]), v1[n]) for n in "ab"}
    w = make_workload(
        name=s.name, topics=s.topics, output=s.output, partitions=2, per_stream=150, keys=12, seed=11
    )
    for spec in w.query_json["inputs"][:2]:
        spec["format"] = "avro"
    json_c = {"type": "object", "properties": {f: {"type": "integer"} for f in FIELDS}}
    schema = result_schema(s.name, "abc", {"a": v1["a"], "b": v1["b"], "c": json_c})
    w.query_json["output"] = {"topic": s.output, "format": "avro", "schema": schema}
    w.query_json["dead_letter"] = {"topic": dead_topic}
    half = len(w.items) // 2
    items: list[tuple[str, int, Any, bytes]] = []
    for i, (stream, p, record) in enumerate(w.items):
        if stream == "c":
            items.append((stream, p, record, json.dumps(record).encode()))
        elif stream == "a" and i >= half:  # the new writer schema, registered mid-stream
            if "v2" not in ids:
                ids["v2"] = registry.register(subject_of(s.topics["a"]), v2)
            record = {**record, "note": f"n{i}"}
            items.append((stream, p, record, frame(ids["v2"], _body(v2, record))))
        else:
            items.append((stream, p, record, frame(ids[stream], _body(v1[stream], record))))
    bad = [
        ("a", 0, None, frame(987_654, b"\x02\x04")),  # no such schema id
        ("b", 1, None, frame(ids["b"], b"\x02")),  # the body ends before the schema's fields do
    ]
    items[half + 5 : half + 5] = bad
    assert ids["v2"] != ids["a"]
    monkeypatch.setenv("STREAMJOIN_SCHEMA_REGISTRY_URL", schema_registry)
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)

    async def scenario() -> tuple[Counter[str], list[Any], list[Any], list[Event]]:
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 2)
        events: list[Event] = []
        chunk = len(items) // 4 + 1
        for start in range(0, len(items), chunk):  # SIGKILLed between chunks: exactly once still
            events += _produce(kafka_broker, s.topics, items[start : start + chunk])
            if start + chunk < len(items):
                await asyncio.sleep(1.5)
                joiner.kill()
                joiner.start()
        want = expected_ids(parse_query(w.query_json), events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=90, quiet_s=3
        )
        dead = await consume_output(kafka_broker, dead_topic, want=len(bad), timeout_s=30, quiet_s=1)
        return want, records, dead, events

    (want, records, dead, events), _ = run_scenario(joiner, scenario)
    assert want, "no results: the test proves nothing"
    out_id, out_schema = registry.latest(subject_of(s.output))
    assert out_schema == schema
    reader = AvroReader(registry)
    rows = [reader.read(r.value) for r in records]
    assert reader.schema_ids == {out_id}
    assert Counter(row["id"] for row in rows) == want
    by_fragment = {f"{s.topics[e.stream]}:{e.partition}:{e.offset}": (e.stream, e.record) for e in events}
    for row in rows:
        assert row["query"] == s.name
        for fragment in row["id"].split("|"):
            stream, record = by_fragment[fragment]
            assert {f: row[f"{stream}_{f}"] for f in FIELDS} == {f: record[f] for f in FIELDS}
    reasons = sorted(dict(r.headers)["reason"].decode() for r in dead)
    assert len(reasons) == 2, reasons
    assert "does not match schema id" in reasons[0] and "unknown schema id 987654" in reasons[1], reasons
    assert sorted(r.value for r in dead) == sorted(b[3] for b in bad)


def test_flat_output_on_a_topic_equals_replays_flat_format(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
) -> None:
    s = query_setup(1)  # one partition: the ids are replay's `topic:0:offset`
    w = make_workload(
        name=s.name, topics=s.topics, output=s.output, partitions=1, per_stream=120, keys=8, seed=3
    )
    w.query_json["output"] = {"topic": s.output, "format": "flat"}
    items = [
        (stream, p, record, json.dumps(record, separators=(",", ":")).encode())
        for stream, p, record in w.items
    ]
    out = io.StringIO()
    replay(
        w.query,
        [json.dumps({"stream": st, "record": r}) + "\n" for st, _, r in w.items],
        out,
        output_format="flat",
    )
    replayed = sorted(out.getvalue().encode().splitlines())
    assert len(replayed) > 20
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)

    async def scenario() -> list[Any]:
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 1)
        _produce(kafka_broker, s.topics, items)
        return await consume_output(kafka_broker, s.output, want=len(replayed), timeout_s=60, quiet_s=3)

    records, _ = run_scenario(joiner, scenario)
    assert sorted(r.value for r in records) == replayed
