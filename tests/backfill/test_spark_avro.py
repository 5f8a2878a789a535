"""The Spark back-fill of a query with Avro inputs, schemas in a real registry (Apicurio), vs the oracle.

Inputs `a` and `b` are archived in the Confluent wire format (two writer schemas each, malformed
records kept as they came); Spark reads their timestamps, the rows history and the join feed with
the joiner's Avro decoder, and the result ids equal the oracle's.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from streamjoin.backfill.job import BackfillJob
from streamjoin.backfill.sink import SinkSpec
from streamjoin.schema_registry import registry_at

from .test_avro import avro_query, avro_values
from .workload import Oracle, Workload, make_workload

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOPICS = {"a": "bfa.a", "b": "bfa.b", "c": "bfa.c"}


@pytest.mark.parametrize(("kind", "start", "end"), [("range", 130, 5_000), ("rows", 207, 611)])
def test_avro_inputs_back_fill_equals_oracle(
    spark: Any, schema_registry: str, tmp_path: Path, kind: str, start: int, end: int
) -> None:
    w = make_workload(TOPICS, partitions=3, records=1_200, keys=15, seed=12, malformed=20)
    registry = registry_at(schema_registry)
    assert registry is not None
    values = avro_values(w, registry)
    raw = [(s, p, offset, kts, values.get((s, p, offset), value)) for s, p, offset, kts, value in w.raw]
    archived = Workload(w.topics, w.partitions, w.events, raw)
    url = str(tmp_path / "archive")
    archived.write_archive(url)
    query = avro_query(kind, TOPICS, name=f"qa{kind}")
    job = BackfillJob(spark, query, start, end, url, schema_registry_url=schema_registry)
    summary = job.write(SinkSpec("parquet", str(tmp_path / "out")))
    out = [json.loads(v) for v in pq.read_table(tmp_path / "out").column("value").to_pylist()]
    want = Oracle(query, w.events).ids(start, end)
    got = Counter(v["id"] for v in out)
    assert sum(want.values()) > 50
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert summary.malformed > 0 and summary.results == sum(want.values())
    by_n = {e.record["n"]: e.record for e in w.events}
    assert all(v["tuples"][s] == by_n[v["tuples"][s]["n"]] for v in out for s in "abc")
