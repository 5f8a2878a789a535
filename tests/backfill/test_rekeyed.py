"""The Spark back-fill of queries whose inputs the live joiner re-keys (slow).

The archive holds unkeyed producers' records: each record in a random partition of its topic, with
3, 3 and 2 partitions. The queries declare no key, so the partitioning plan re-keys every input:
on the shared attribute `k` over N = 3 operator partitions, or, for `a.k = b.k AND b.g = c.g`, on
one partition. The back-fill must give what the live operators give: each record grouped by
`partition_for(record[k], N)` and presented as (input, source partition, source offset), so rows
windows count per (source partition, operator partition) and ids name the source records. Checked
against the brute-force oracle per operator partition (the global oracle for range windows, where
partitioning cannot matter) and against the engine run over each operator partition's records,
as replay runs it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from streamjoin.backfill.job import BackfillJob, BackfillSummary
from streamjoin.backfill.sink import SinkSpec
from streamjoin.engine import Entry, ResultFormatter
from streamjoin.operator import OperatorFactory
from streamjoin.query import QueryDef
from streamjoin.query.partitioning import partition_for
from streamjoin.testing import Event, expected_results

from .workload import Workload, make_query, make_workload

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOPICS = {"a": "rk.a", "b": "rk.b", "c": "rk.c"}
COUNTS = {"a": 3, "b": 3, "c": 2}
SHARED = (("a.k", "=", "b.k"), ("b.k", "=", "c.k"), ("a.v", ">=", "c.v"))
CHAIN = (("a.k", "=", "b.k"), ("b.g", "=", "c.g"), ("a.v", ">=", "c.v"))
END = 1_000_000


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Workload]:
    """Write one unkeyed workload (records in random partitions, malformed ones included)."""
    w = make_workload(TOPICS, records=700, keys=12, seed=16, malformed=12, spread=True, counts=COUNTS)
    url = str(tmp_path_factory.mktemp("archive"))
    w.write_archive(url)
    return url, w


def _in_order(events: Sequence[Event], query: QueryDef) -> list[Event]:
    """Return the events as the back-fill feeds them: (ts, input, source partition, offset)."""
    index = {s: i for i, s in enumerate(query.stream_names)}
    return sorted(events, key=lambda e: (e.ts, index[e.stream], e.partition, e.offset))


def _by_operator(events: Sequence[Event], partitions: int) -> dict[int, list[Event]]:
    """Return the events each operator partition sees (every event has `k`: malformed ones are not events)."""
    groups: dict[int, list[Event]] = {}
    for e in events:
        q = 0 if partitions == 1 else partition_for(e.record["k"], partitions)
        groups.setdefault(q, []).append(e)
    return groups


def oracle_ids(query: QueryDef, events: Sequence[Event], start: float, end: float) -> Counter[str]:
    """Return the brute-force oracle's ids of the results with `t_max` in `[start, end)`."""
    formatter = ResultFormatter(query)
    names = query.stream_names
    ts_of = {(e.stream, e.partition, e.offset): e.ts for e in events}
    ordered = _in_order(events, query)
    got: Counter[str] = Counter()
    for key, count in expected_results(
        query, ordered, partitions={(e.stream, e.partition) for e in events}
    ).items():
        t_max = max(ts_of[(s, p, o)] for s, (p, o) in zip(names, key, strict=True))
        if start <= t_max < end:
            got[formatter.result_id([Entry(i, p, o, 0, {}) for i, (p, o) in enumerate(key)])] += count
    return got


def engine_ids(query: QueryDef, events: Sequence[Event], q: int, start: float, end: float) -> Counter[str]:
    """Return the ids the engine of operator partition `q` gives, fed like replay (in time order)."""
    operator = OperatorFactory(query).build(q)
    formatter = ResultFormatter(query)
    results = []
    for n, e in enumerate(_in_order(events, query)):
        operator.add(e.stream, e.record, ts=e.ts, partition=e.partition, offset=e.offset)
        if n % 512 == 511:
            results += operator.advance()
    results += operator.finish()
    return Counter(formatter.result_id(r) for r in results if start <= max(entry.ts for entry in r) < end)


def _backfill(
    spark: Any, query: QueryDef, url: str, out: Path, start: float, end: float
) -> tuple[BackfillJob, BackfillSummary, Counter[str], list[int]]:
    """Run the back-fill into Parquet; return the job, its summary, the result ids and partitions."""
    job = BackfillJob(spark, query, start, end, url)
    summary = job.write(SinkSpec("parquet", str(out)))
    table = pq.read_table(out)
    values = [json.loads(v) for v in table.column("value").to_pylist()]
    assert all(start <= v["ts"] < end for v in values)
    assert table.column("id").to_pylist() == [v["id"] for v in values]
    return job, summary, Counter(v["id"] for v in values), table.column("partition").to_pylist()


@pytest.mark.parametrize(
    ("kind", "start", "end"),
    [("range", 140, 4_000), ("rows", 120, 700), ("partitioned", 90, 500)],
)
def test_shared_attribute_rekeys_every_input_and_groups_by_it(
    spark: Any, archive: tuple[str, Workload], tmp_path: Path, kind: str, start: int, end: int
) -> None:
    url, w = archive
    query = make_query(f"rk{kind}", kind, TOPICS, keyed=False, where=SHARED)
    job, summary, got, partitions = _backfill(spark, query, url, tmp_path / "out", start, end)
    plan = job.partitioning
    assert (plan.partitions, plan.single_partition) == (3, False)
    assert [(r.attribute, r.rekeyed) for r in plan.routes] == [("k", True)] * 3
    groups = _by_operator(w.events, 3)
    per_operator = Counter[str]()
    for q, events in groups.items():
        want = oracle_ids(query, events, start, end)
        assert engine_ids(query, events, q, start, end) == want, q
        per_operator += want
    assert got == per_operator, (
        f"missing {sum((per_operator - got).values())}, extra {sum((got - per_operator).values())}"
    )
    assert sum(got.values()) > 50 and summary.results == sum(got.values())
    assert summary.malformed > 0 and summary.duplicates == 0 and summary.late == 0
    if kind == "range":  # range windows do not depend on partitioning: the global result set
        assert got == oracle_ids(query, w.events, start, end)
    else:  # counting per (source partition, operator partition) is not counting per source partition
        assert got != oracle_ids(query, w.events, start, end)
    # a result goes to its operator partition: the one of its records' `k`
    components = {(e.stream, e.partition, e.offset): e for e in w.events}
    for rid, partition in zip(
        pq.read_table(tmp_path / "out").column("id").to_pylist(), partitions, strict=True
    ):
        topic, p, o = rid.split("|")[0].rsplit(":", 2)
        assert topic == TOPICS["a"]
        assert partition == partition_for(components[("a", int(p), int(o))].record["k"], 3)


@pytest.mark.parametrize(("kind", "start", "end"), [("range", 140, 2_000), ("rows", 120, 700)])
def test_no_shared_attribute_runs_on_one_partition(
    spark: Any, archive: tuple[str, Workload], tmp_path: Path, kind: str, start: int, end: int
) -> None:
    url, w = archive
    query = make_query(f"rkchain{kind}", kind, TOPICS, keyed=False, where=CHAIN)
    job, summary, got, partitions = _backfill(spark, query, url, tmp_path / "out", start, end)
    assert (job.partitioning.partitions, job.partitioning.single_partition) == (1, True)
    assert [(r.attribute, r.rekeyed) for r in job.partitioning.routes] == [(None, True)] * 3
    want = oracle_ids(query, w.events, start, end)  # one operator: the global result set
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert engine_ids(query, w.events, 0, start, end) == want
    assert sum(want.values()) > 50 and set(partitions) == {0}
    assert summary.results == sum(want.values()) and summary.malformed > 0 and summary.groups >= 1


def test_keyed_inputs_of_another_placement_are_read_directly(spark: Any, tmp_path: Path) -> None:
    """Declared keys: the archive's partitions are the groups, whatever the producer's partitioner."""
    w = make_workload(TOPICS, partitions=3, records=600, keys=12, seed=5, malformed=0)
    w.write_archive(str(tmp_path / "archive"))
    query = make_query("rkdirect", "rows", TOPICS, where=SHARED)
    job, _, got, partitions = _backfill(spark, query, str(tmp_path / "archive"), tmp_path / "out", 0, END)
    assert job.partitioning.rekeyed == () and job.partitioning.partitions == 3
    want = Counter[str]()
    for p in range(3):
        want += oracle_ids(query, [e for e in w.events if e.partition == p], 0, END)
    assert got == want and sum(want.values()) > 20
    ids = pq.read_table(tmp_path / "out").column("id").to_pylist()
    assert [int(rid.split("|")[0].rsplit(":", 2)[1]) for rid in ids] == partitions  # partition k % 3
    assert job.router.partition(0, b'{"k": 4}', 1) == 1  # k % 3 placement kept, not partition_for
