"""The joiner's batch builder with a select list of columns: the very rows replay writes.

The live path (`BatchBuilder`, one record per batch) and `streamjoin replay` share the projection
(`ResultFormatter.value`); their output records must be equal byte for byte, in the envelope and
the flat format, and every row must be the oracle's (`streamjoin.testing.oracle_rows`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamjoin.formats import AvroReader
from streamjoin.query import QueryDef, parse_query
from streamjoin.query.dump import dump_query
from streamjoin.testing.oracle_rows import expected_rows

from .test_formats_batch import _feed, _replayed

COLUMNS = [
    {"name": "gross", "expr": {"op": "*", "args": [{"ref": ["a", "v"]}, 1.2]}},
    {"star": "c"},
    {
        "name": "diff",
        "expr": {"op": "abs", "args": [{"op": "-", "args": [{"ref": ["a", "v"]}, {"ref": ["c", "v"]}]}]},
    },
    {
        "name": "note",
        "expr": {"op": "coalesce", "args": [{"op": "upper", "args": [{"ref": ["a", "note"]}]}, "-"]},
    },
]
COLUMN_TYPES = [
    ("gross", "double"),
    ("c_ts", "long"),
    ("c_k", "long"),
    ("c_v", "long"),
    ("diff", "long"),
    ("note", "string"),
]


def _query(fmt: str) -> QueryDef:
    return parse_query(
        {
            "name": "q",
            "inputs": [
                {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 6}} for s in "abc"
            ],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"], ["a.v", ">=", "c.v"]],
            "output": {"topic": "out", "format": fmt},
            "columns": COLUMNS,
        }
    )


@pytest.mark.parametrize("fmt", ["envelope", "flat"])
def test_projected_batches_equal_replay_and_the_oracle(fmt: str) -> None:
    query = _query(fmt)
    run, events = _feed(query)
    assert len(run.results) > 50
    assert sorted(run.results) == sorted(_replayed(query, events, fmt))
    want = expected_rows(query, run.events)
    got: dict[str, Any] = {}
    for raw in run.results:
        value = json.loads(raw)
        got[value["id"]] = (
            value["row"]
            if fmt == "envelope"
            else {k: v for k, v in value.items() if k not in ("query", "ts", "id")}
        )
    assert len(got) == len(run.results) and got == want
    assert any(row["note"] != "-" for row in got.values())  # records with a note: upper-cased


def test_projected_avro_rows_are_replays_flat_rows() -> None:
    nullable = [{"name": n, "type": ["null", t], "default": None} for n, t in COLUMN_TYPES]
    schema = {
        "type": "record",
        "name": "q_result",
        "fields": [
            {"name": "query", "type": "string"},
            {"name": "ts", "type": ["long", "double"]},
            {"name": "id", "type": "string"},
            *nullable,
        ],
    }
    query = parse_query(
        {**dump_query(_query("envelope")), "output": {"topic": "out", "format": "avro", "schema": schema}}
    )
    run, events = _feed(query)
    reader = AvroReader(run.registry)
    rows = [reader.read(r) for r in run.results]
    flat = [json.loads(line) for line in _replayed(query, events, "flat")]
    assert len(rows) > 50 and not run.dead
    assert sorted(rows, key=json.dumps) == sorted(flat, key=json.dumps)
