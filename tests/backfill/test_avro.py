"""Avro inputs in the back-fill: the joiner's decoder, schemas by id from the registry (in memory here).

The same workload is back-filled twice, once with every input in JSON and once with inputs `a` and
`b` in Avro (two writer schemas each, malformed records kept as they arrived): the result ids equal
the oracle's, and every output record equals the JSON run's record, since an Avro component is
spliced as its JSON re-encoding, as the live joiner does.
"""

from __future__ import annotations

import io
import json
import math
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pandas as pd
import pytest
from typer.testing import CliRunner

from streamjoin.backfill.codecs import input_codecs, timestamps
from streamjoin.backfill.history import HistoryDecoder
from streamjoin.backfill.jobs import BackfillJobs, BackfillRefused
from streamjoin.backfill.plan import BackfillPlan, plan_backfill
from streamjoin.backfill.stage import FEED_COLUMNS, GroupRunner
from streamjoin.engine import RecordReader, ResultFormatter
from streamjoin.formats import frame
from streamjoin.query import QueryDef, parse_query
from streamjoin.query.dump import dump_query
from streamjoin.schema_registry import MemorySchemaRegistry, SchemaRegistry, subject_of

from .feed_model import feed_rows
from .workload import Oracle, Workload, make_query, make_workload

TOPICS = {"a": "t.a", "b": "t.b", "c": "t.c"}
FIELDS = ("ts", "k", "v", "g", "n")
V1 = {"type": "record", "name": "r", "fields": [{"name": f, "type": "long"} for f in FIELDS]}
V2 = {**V1, "fields": list(reversed(V1["fields"]))}  # another writer schema: the same record
AVRO = "ab"


def avro_query(kind: str, topics: dict[str, str] = TOPICS, name: str = "q") -> QueryDef:
    """Return `make_query`'s query with inputs `a` and `b` in Avro."""
    spec = dump_query(make_query(name, kind, topics))
    for inp in spec["inputs"]:
        if inp["stream"] in AVRO:
            inp["format"] = "avro"
    return parse_query(spec)


def _encode(value: bytes, schema: dict[str, Any], schema_id: int) -> bytes:
    """Return `value` (JSON) as a framed Avro record; a malformed one stays as it came (unframed)."""
    try:
        record = json.loads(value)
    except ValueError:
        return value
    if not isinstance(record, dict) or set(record) != set(FIELDS):
        return value
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), record)
    return frame(schema_id, buffer.getvalue())


def avro_values(w: Workload, registry: SchemaRegistry) -> dict[tuple[str, int, int], bytes]:
    """Return the Avro value of every record of the Avro streams, by (stream, partition, offset):
    schema V1 at even offsets, V2 at odd ones (both registered under the topic's subject)."""
    ids = {s: (registry.register(subject_of(w.topics[s]), V1), registry.register(subject_of(w.topics[s]), V2))
           for s in AVRO}  # fmt: skip
    return {
        (stream, p, offset): _encode(value, V2 if offset % 2 else V1, ids[stream][offset % 2])
        for stream, p, offset, _, value in w.raw
        if stream in AVRO
    }


def _run(plan: BackfillPlan, rows: list[tuple[Any, ...]], registry: MemorySchemaRegistry) -> tuple[
    dict[str, Any], GroupRunner
]:  # fmt: skip
    frame_ = pd.DataFrame.from_records(rows, columns=list(FEED_COLUMNS))

    def batches() -> Iterator[pd.DataFrame]:
        for i in range(0, len(frame_), 97):
            yield frame_.iloc[i : i + 97]

    runner = GroupRunner(plan, registry=registry)
    out: dict[str, Any] = {}
    for result in runner.frames(batches()):
        for rid, value in zip(result["id"], result["value"], strict=True):
            assert rid not in out
            out[rid] = json.loads(value)
    return out, runner


@pytest.mark.parametrize("kind", ["range", "rows", "partitioned"])
@pytest.mark.parametrize("seed", [1, 2])
def test_avro_inputs_back_fill_as_json_inputs_do(kind: str, seed: int) -> None:
    w = make_workload(TOPICS, partitions=3, records=600, seed=seed)
    registry = MemorySchemaRegistry()
    values = avro_values(w, registry)
    json_query, query = make_query("q", kind, TOPICS), avro_query(kind)
    names = query.stream_names
    for start, end in [(0, 10_000), (150, 420)]:
        json_plan = plan_backfill(json_query, start, end, target_groups=4, partitions=3)
        avro_plan = plan_backfill(query, start, end, target_groups=4, partitions=3)
        rows = feed_rows(json_plan, w)
        avro_rows = [(*r[:6], values.get((names[r[1]], r[2], r[3]), r[6])) for r in rows]
        assert sum(r[6] != a[6] for r, a in zip(rows, avro_rows, strict=True)) > 100
        want, json_runner = _run(json_plan, rows, registry)
        got, avro_runner = _run(avro_plan, avro_rows, registry)
        assert Counter(list(got)) == Oracle(query, w.events).ids(start, end)
        assert got == want  # the same output records (the Avro components as their JSON)
        assert avro_runner.stats.malformed == json_runner.stats.malformed > 0
        assert len(want) > 20


def test_unknown_schema_ids_and_unframed_values_are_malformed_records() -> None:
    query = avro_query("range")
    registry = MemorySchemaRegistry()
    decode = input_codecs(query, RecordReader(query), ResultFormatter(query), registry)[0][0]
    good = _encode(json.dumps({"ts": 7, "k": 1, "v": 2, "g": 0, "n": 3}).encode(), V1,
                   registry.register("t.a-value", V1))  # fmt: skip
    values = [good, frame(4242, b"\x02"), b'{"ts": 5}', good[:-1], None]
    assert timestamps(decode, "a", values, [None, 1, 2, math.nan, None]) == [7.0, None, None, None, None]


def test_rows_history_reads_avro_values() -> None:
    query = avro_query("partitioned")
    registry = MemorySchemaRegistry()
    schema_id = registry.register("t.a-value", V1)
    plan = plan_backfill(query, 100, 200, partitions=1)
    records = [{"ts": t, "k": 1, "v": 0, "g": t % 2, "n": t} for t in range(5)]
    values = [_encode(json.dumps(r).encode(), V1, schema_id) for r in records] + [b"[1, 2]"]
    batch = pd.DataFrame({"input": 0, "opart": 0, "partition": 0, "offset": range(6), "kafka_ts": 0,
                          "value": values})  # fmt: skip
    frames = list(HistoryDecoder(plan, registry=registry).frames([batch]))
    assert [(r.ts, r.gkey) for r in frames[0].itertuples()] == [(float(t), f"n:{t % 2}") for t in range(5)]


def test_cli_refuses_avro_inputs_without_a_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamjoin.cli.main import app

    monkeypatch.delenv("STREAMJOIN_SCHEMA_REGISTRY_URL", raising=False)
    path = tmp_path / "q.json"
    path.write_text(json.dumps(dump_query(avro_query("range"))))
    result = CliRunner().invoke(
        app, ["backfill", str(path), "--from", "0", "--to", "10", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "Avro input(s) a, b" in result.output and "STREAMJOIN_SCHEMA_REGISTRY_URL" in result.output


def test_jobs_refuse_avro_inputs_without_a_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMJOIN_SCHEMA_REGISTRY_URL", raising=False)
    definition = dump_query(avro_query("range"))
    command = [sys.executable, "-c", "pass"]
    jobs = BackfillJobs(tmp_path / "jobs", command=command)
    with pytest.raises(BackfillRefused, match=r"Avro input\(s\) a, b.*STREAMJOIN_SCHEMA_REGISTRY_URL"):
        jobs.start(definition, 0, 10)
    assert not any((tmp_path / "jobs").iterdir()), "a refused back-fill starts nothing"
    with_registry = BackfillJobs(
        tmp_path / "ok", command=command, env={"STREAMJOIN_SCHEMA_REGISTRY_URL": "http://r"}
    )
    job = with_registry.start(definition, 0, 10)
    with_registry.wait("q", job.id, timeout_s=30)


def test_only_envelope_output_goes_to_the_output_topic() -> None:
    from streamjoin.backfill.codecs import need_envelope_for_topic

    inputs = [{"stream": s, "topic": s, "window": {"range": 10}} for s in "ab"]
    base = {"name": "q", "inputs": inputs, "where": [["a.k", "=", "b.k"]]}
    envelope = parse_query({**base, "output": {"topic": "o"}})
    flat = parse_query({**base, "output": {"topic": "o", "format": "flat"}})
    need_envelope_for_topic(envelope, None)
    need_envelope_for_topic(flat, "files/")  # Parquet files: the envelope, as documented
    with pytest.raises(ValueError, match="'flat' output records"):
        need_envelope_for_topic(flat, None)
