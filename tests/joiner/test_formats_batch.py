"""The joiner's formats without a broker: the batch builder fed Avro and JSON records one batch at
a time, with the in-memory schema registry.

- Avro inputs (two writer schemas, the second registered half-way) give the result ids of the
  brute-force oracle, and the very bytes replay writes for the same records as JSON (the envelope);
- Avro output rows decode to the flat rows of replay's `--format flat`;
- flat JSON output equals replay's `--format flat` byte for byte;
- an unknown schema id, a truncated body and a JSON record on an Avro topic are dead letters with
  their reasons, and change nothing else.
"""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from typing import Any

import fastavro
from tests.kafka_records import TopicPartition, consumer_record

from streamjoin.formats import AvroReader, frame, result_schema
from streamjoin.joiner.batch.builder import BatchBuilder
from streamjoin.operator import OperatorFactory
from streamjoin.query import QueryDef, parse_query
from streamjoin.replay import replay
from streamjoin.schema_registry import MemorySchemaRegistry, subject_of
from streamjoin.testing import Event, expected_results

FIELDS = ("ts", "k", "v")
V1 = {"type": "record", "name": "r", "fields": [{"name": f, "type": "long"} for f in FIELDS]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "note", "type": "string", "default": ""}]}


def _query(output: dict[str, Any], avro: str = "ab") -> QueryDef:
    return parse_query(
        {
            "name": "q",
            "inputs": [
                {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 6}}
                | ({"format": "avro"} if s in avro else {})
                for s in "abc"
            ],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"], ["a.v", ">=", "c.v"]],
            "output": output,
        }
    )


def _events(n: int = 240, seed: int = 4) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed)
    events = []
    for i in range(n):
        stream = rng.choice("abc")
        record = {"ts": i // 3, "k": rng.randint(1, 4), "v": rng.randint(0, 9)}
        if stream == "a" and i >= n // 2:
            record["note"] = f"n{i}"  # written with the second schema
        events.append((stream, record))
    return events


def _avro(schema: dict[str, Any], schema_id: int, record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), record)
    return frame(schema_id, buffer.getvalue())


class _Run:
    """Feed `events` to a builder of `query`, one record per batch; keep results and dead letters."""

    def __init__(self, query: QueryDef, registry: MemorySchemaRegistry) -> None:
        self.query = query
        self.registry = registry
        self.builder = BatchBuilder(query, 0, "dead", schemas=registry, max_future=None)
        self.operator = OperatorFactory(query).build(0, journal=True)
        self.offsets = {f"t.{s}": 0 for s in "abc"}
        self.results: list[bytes] = []
        self.dead: list[tuple[str, bytes]] = []
        self.events: list[Event] = []
        self.batch = 0

    def send(self, stream: str, value: bytes, record: dict[str, Any] | None) -> None:
        topic = f"t.{stream}"
        offset = self.offsets[topic]
        self.offsets[topic] += 1
        self.batch += 1
        built = self.builder.build(
            self.operator,
            {TopicPartition(topic, 0): [consumer_record(topic, 0, offset, value)]},
            batch=self.batch,
            offsets={},
            trims=[],
            last_arrival={},
            now=0.0,
        )
        self.results.extend(r.value for r in built.results)
        self.dead.extend((dict(d.headers)["reason"].decode(), d.value) for d in built.dead)
        if record is not None:
            self.events.append(Event(stream, 0, offset, record["ts"], record))

    def finish(self) -> None:
        for r in self.operator.finish():
            self.results.append(self.builder._encode_output([r], [])[0].value)
        # Exactly-once recovery counts an exclusive output partition's records by this prefix
        # (`kafka_io.highest_published`): every output record of the query starts with it.
        prefix = self.builder.output_prefix()
        assert all(value.startswith(prefix) for value in self.results)


def _feed(query: QueryDef, bad: bool = False) -> tuple[_Run, list[tuple[str, dict[str, Any]]]]:
    registry = MemorySchemaRegistry()
    run = _Run(query, registry)
    ids = {s: registry.register(subject_of(f"t.{s}"), V1) for s in "ab"}
    avro = {i.stream for i in query.inputs if i.format == "avro"}
    events = _events()
    for i, (stream, record) in enumerate(events):
        if bad and i == len(events) // 2 + 3:
            run.send("a", frame(4242, b"\x02"), None)
            run.send("b", frame(ids["b"], b"\x02"), None)
            run.send("a", json.dumps(record).encode(), None)
        if stream not in avro:
            run.send(stream, json.dumps(record, separators=(",", ":")).encode(), record)
        elif "note" in record:
            ids["a2"] = ids.get("a2") or registry.register(subject_of("t.a"), V2)
            run.send(stream, _avro(V2, ids["a2"], record), record)
        else:
            run.send(stream, _avro(V1, ids[stream], record), record)
    run.finish()
    return run, events


def _replayed(query: QueryDef, events: list[tuple[str, dict[str, Any]]], fmt: Any) -> list[bytes]:
    out = io.StringIO()
    replay(query, [json.dumps({"stream": s, "record": r}) + "\n" for s, r in events], out, output_format=fmt)
    return [line.encode() for line in out.getvalue().splitlines()]


def _ids(query: QueryDef, events: list[Event]) -> Counter[str]:
    topics = [i.topic for i in query.inputs]
    return Counter(
        {
            "|".join(f"{topics[i]}:{p}:{o}" for i, (p, o) in enumerate(key)): n
            for key, n in expected_results(query, events).items()
        }
    )


def test_avro_inputs_equal_the_oracle_and_replays_envelope() -> None:
    query = _query({"topic": "out"})
    run, events = _feed(query)
    want = _ids(query, run.events)
    assert sum(want.values()) > 50
    assert Counter(json.loads(r)["id"] for r in run.results) == want
    assert sorted(run.results) == sorted(_replayed(query, events, "envelope"))
    assert not run.dead


def test_flat_json_output_equals_replays_flat_format() -> None:
    query = _query({"topic": "out", "format": "flat"}, avro="")
    run, events = _feed(query)
    assert len(run.results) > 50
    assert sorted(run.results) == sorted(_replayed(query, events, "flat"))


def test_avro_output_rows_are_replays_flat_rows() -> None:
    schemas: dict[str, Any] = {
        "a": V2,
        "b": V1,
        "c": {"properties": {f: {"type": "integer"} for f in FIELDS}},
    }
    schema = result_schema("q", "abc", schemas)
    query = _query({"topic": "out", "format": "avro", "schema": schema})
    run, events = _feed(query)
    out_id, registered = run.registry.latest(subject_of("out"))
    assert registered == schema
    reader = AvroReader(run.registry)
    rows = [reader.read(r) for r in run.results]
    assert reader.schema_ids == {out_id}
    flat = [json.loads(line) for line in _replayed(query, events, "flat")]
    for row in flat:  # fields a record does not have are null in Avro
        row.setdefault("a_note", None)
    key = json.dumps
    assert sorted(rows, key=key) == sorted(flat, key=key)
    assert len(rows) > 50


def test_unreadable_records_are_dead_letters_with_their_reasons() -> None:
    query = _query({"topic": "out"})
    clean, _ = _feed(query)
    run, _ = _feed(query, bad=True)
    reasons = [reason for reason, _ in run.dead]
    assert len(reasons) == 3, reasons
    assert "unknown schema id 4242" in reasons[0]
    assert "does not match schema id" in reasons[1]
    assert "magic byte 123" in reasons[2]
    assert run.dead[0][1] == frame(4242, b"\x02")  # the record as it arrived

    # The bad records took offsets, so ids differ; the results, keyed by their records, do not.
    def records(results: list[bytes]) -> list[str]:
        return sorted(json.dumps(json.loads(r)["tuples"], sort_keys=True) for r in results)

    assert records(run.results) == records(clean.results)


def test_a_result_off_the_output_schema_is_a_dead_letter_and_the_rest_go_on() -> None:
    with_w = {"properties": {f: {"type": "integer"} for f in (*FIELDS, "w")}}
    schema = result_schema("q", "abc", {"a": V1, "b": V1, "c": with_w})
    query = _query({"topic": "out", "format": "avro", "schema": schema})
    registry = MemorySchemaRegistry()
    run = _Run(query, registry)
    # max_record_bytes just over the key margin: every batch goes through `_fit`, which needs the
    # output records aligned with the results.
    run.builder = BatchBuilder(query, 0, "dead", schemas=registry, max_future=None, max_record_bytes=4100)
    ids = {s: registry.register(subject_of(f"t.{s}"), V1) for s in "ab"}
    run.send("a", _avro(V1, ids["a"], {"ts": 1, "k": 1, "v": 5}), None)
    run.send("b", _avro(V1, ids["b"], {"ts": 1, "k": 1, "v": 5}), None)
    run.send("c", b'{"ts":2,"k":1,"v":1,"w":"bad"}', None)
    run.send("c", b'{"ts":3,"k":1,"v":1,"w":7}', None)
    run.send("a", _avro(V1, ids["a"], {"ts": 100, "k": 97, "v": 0}), None)  # the watermark moves on
    run.send("b", _avro(V1, ids["b"], {"ts": 100, "k": 98, "v": 0}), None)
    run.send("c", b'{"ts":100,"k":99,"v":0,"w":0}', None)
    assert len(run.dead) == 1 and "does not match the output schema" in run.dead[0][0]
    assert json.loads(run.dead[0][1])["tuples"]["c"]["w"] == "bad"  # the result, as its envelope
    rows = [AvroReader(registry).read(r) for r in run.results]
    assert [(row["c_w"], row["id"]) for row in rows] == [(7, "t.a:0:0|t.b:0:0|t.c:0:1")]
