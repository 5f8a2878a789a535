"""The output path: one encoder for replay, the joiner and `encode`; replay's `--format` and `--count`."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.kafka_records import TopicPartition, consumer_record

from streamjoin.engine import ResultFormatter
from streamjoin.joiner.batch.builder import BatchBuilder
from streamjoin.operator import OperatorFactory
from streamjoin.query import parse_query
from streamjoin.replay import replay

RAW = {
    "name": "q",
    "inputs": [
        {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 5}} for s in ("a", "b", "c")
    ],
    "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
    "output": {"topic": "q.out"},
}
QUERY = parse_query(RAW)


def _events(n: int = 300, seed: int = 3) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed)
    values: list[Any] = [1.5, 1e-05, 1e20, "\u00e9t\u00e9", "x\x7fy", 2**70, None, [1, {"z": 0.1}], True]
    events = []
    for i in range(n):
        record = {"ts": i // 3 + rng.choice([0, 0.25]), "k": rng.randint(1, 3), "v": rng.choice(values)}
        events.append((rng.choice("abc"), record))
    return events


def _lines(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [json.dumps({"stream": s, "record": r}) + "\n" for s, r in events]


def test_replay_and_joiner_and_encode_write_the_same_bytes() -> None:
    events = _events()
    out = io.StringIO()
    operator = OperatorFactory(QUERY).build()
    replay(QUERY, _lines(events), out)
    replayed = out.getvalue().splitlines()
    # The reference: `encode` (json.dumps's bytes) of every result of a plain run.
    reference_operator = OperatorFactory(QUERY).build()
    formatter = ResultFormatter(QUERY)
    offsets = dict.fromkeys("abc", 0)
    results = []
    for stream, record in events:
        reference_operator.add(stream, record, ts=record["ts"], offset=offsets[stream])
        offsets[stream] += 1
    results = reference_operator.advance() + reference_operator.finish()
    encoded = [formatter.encode(r).decode() for r in results]
    assert replayed == encoded and len(encoded) > 50
    # The joiner, fed the same records as compact JSON bytes, one batch per record (arrival order).
    builder = BatchBuilder(QUERY, 0, "dead")
    operator = OperatorFactory(QUERY).build(0, journal=True)
    offsets = dict.fromkeys("abc", 0)
    joined: list[str] = []
    for batch, (stream, record) in enumerate(events):
        raw = json.dumps(record, separators=(",", ":")).encode()
        message = consumer_record(f"t.{stream}", 0, offsets[stream], raw)
        offsets[stream] += 1
        built = builder.build(
            operator,
            {TopicPartition(message.topic, 0): [message]},
            batch=batch,
            offsets={},
            trims=[],
            last_arrival={},
            now=0.0,
        )
        joined.extend(r.value.decode() for r in built.results)
    joined.extend(formatter.splicer()(r).decode() for r in operator.finish())
    assert sorted(joined) == sorted(encoded)


def _cli(tmp_path: Path, *options: str) -> str:
    query, events = tmp_path / "q.json", tmp_path / "events.jsonl"
    query.write_text(json.dumps(RAW), encoding="utf-8")
    events.write_text("".join(_lines(_events())), encoding="utf-8")
    command = [sys.executable, "-m", "streamjoin.cli.main", "replay", *options, str(query), str(events)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return done.stdout


def test_flat_ids_and_count_are_projections_of_the_envelope(tmp_path: Path) -> None:
    envelope = [json.loads(line) for line in _cli(tmp_path).splitlines()]
    assert len(envelope) > 50
    flat = [json.loads(line) for line in _cli(tmp_path, "--format", "flat").splitlines()]
    projected = [
        {
            "query": r["query"],
            "ts": r["ts"],
            "id": r["id"],
            **{f"{s}_{k}": v for s, rec in r["tuples"].items() for k, v in rec.items()},
        }
        for r in envelope
    ]
    assert flat == projected
    assert _cli(tmp_path, "--format", "ids").splitlines() == [r["id"] for r in envelope]
    assert _cli(tmp_path, "--count") == f"{len(envelope)}\n"


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    query = tmp_path / "q.json"
    query.write_text(json.dumps(RAW), encoding="utf-8")
    (tmp_path / "e.jsonl").write_text("", encoding="utf-8")
    command = [sys.executable, "-m", "streamjoin.cli.main", "replay", "--format", "csv", str(query)]
    done = subprocess.run([*command, str(tmp_path / "e.jsonl")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
