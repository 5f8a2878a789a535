"""The Spark back-fill over archives written by the archiver's writer, against the oracle (slow).

Each case runs the real job (`BackfillJob.write` to Parquet) in local[2] and compares the multiset of
result ids with the oracle's, per window kind, for ranges that cut through windows, with malformed
records in the archive and inputs timed by the Kafka timestamp (hour directories pruned).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from streamjoin.backfill.files import EmptyArchiveError
from streamjoin.backfill.job import BackfillJob, spark_hash_long
from streamjoin.backfill.progress import JobProgress
from streamjoin.backfill.sink import SinkSpec

from .workload import KAFKA_MINUTE, KAFKA_TS_BASE, Oracle, kafka_timed, make_query, make_workload

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOPICS = {"a": "bf.a", "b": "bf.b", "c": "bf.c"}


def read_ids(out: Path) -> tuple[Counter[str], list[dict[str, Any]]]:
    """Return the ids and output records of a Parquet result directory."""
    table = pq.read_table(out)
    values = [json.loads(v) for v in table.column("value").to_pylist()]
    assert table.column("id").to_pylist() == [v["id"] for v in values]
    return Counter(v["id"] for v in values), values


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    """Write one workload (3 partitions, malformed records included) into an archive."""
    w = make_workload(TOPICS, partitions=3, records=1_500, keys=15, seed=11, malformed=20)
    url = str(tmp_path_factory.mktemp("archive"))
    w.write_archive(url)
    return url, w


@pytest.mark.parametrize(
    ("kind", "start", "end"),
    [("range", 130, 5_000), ("rows", 207, 611), ("partitioned", 95, 480)],
)
def test_backfill_equals_oracle(
    spark: Any, archive: tuple[str, Any], tmp_path: Path, kind: str, start: int, end: int
) -> None:
    url, w = archive
    query = make_query(f"q{kind}", kind, TOPICS)
    job = BackfillJob(spark, query, start, end, url)
    assert job.plan.strategy == ("partition-time" if kind == "range" else "partition")
    seen: list[JobProgress] = []
    summary = job.write(SinkSpec("parquet", str(tmp_path / "out")), on_progress=seen.append, poll_s=0.2)
    got, values = read_ids(tmp_path / "out")
    want = Oracle(query, w.events).ids(start, end)
    assert sum(want.values()) > 50
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert summary.results == sum(want.values()) and summary.malformed > 0
    assert summary.duplicates == 0 and summary.late == 0
    assert seen and seen[-1].tasks_done == seen[-1].tasks_total > 0 and seen[-1].fraction == 1.0
    assert seen[-1].join_done == seen[-1].join_total == summary.tasks
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions) and all(f < 1 for f in fractions[:-1])
    assert all(start <= v["ts"] < end and set(v) == {"query", "ts", "tuples", "id"} for v in values)


def test_kafka_timestamps_and_hour_pruning(spark: Any, archive: tuple[str, Any], tmp_path: Path) -> None:
    url, w = archive
    query = make_query("qkafka", "rows", TOPICS, kafka_ts=True)
    start, end = KAFKA_TS_BASE + 300 * KAFKA_MINUTE, KAFKA_TS_BASE + 500 * KAFKA_MINUTE
    job = BackfillJob(spark, query, start, end, url)
    summary = job.write(SinkSpec("parquet", str(tmp_path / "out")))
    got, _ = read_ids(tmp_path / "out")
    want = Oracle(query, kafka_timed(w)).ids(start, end)
    assert got == want and sum(want.values()) > 20
    all_files = sum(len(files) for files in job.files.values())
    assert summary.files < all_files, "range inputs timed by Kafka read only the hours they need"


def test_spark_hash_matches(spark: Any) -> None:
    from pyspark.sql import functions as F

    rows = spark.range(-3, 50).select("id", F.hash("id").alias("h")).collect()
    assert [spark_hash_long(r["id"]) for r in rows] == [r["h"] for r in rows]


def test_empty_archive(spark: Any, tmp_path: Path) -> None:
    """A back-fill that would read no file is refused (naming the archive and range), not a success."""
    query = make_query("qempty", "rows", TOPICS)
    with pytest.raises(
        EmptyArchiveError, match=r"nothing to back-fill: the archive at .*nothing.* \[0, 100\)"
    ):
        BackfillJob(spark, query, 0, 100, str(tmp_path / "nothing"))


def _with_bad_timestamps(w: Any) -> list[bytes]:
    """Add records whose timestamp Spark cannot cast (`"yesterday"`, `true`) or is a string, or missing."""
    bad = [b'{"ts": "yesterday", "k": 1, "v": 1}', b'{"ts": true, "k": 2, "v": 1}',
           b'{"ts": "12", "k": 3, "v": 1}', b'{"k": 4, "v": 1}']  # fmt: skip
    for i, value in enumerate(bad):
        stream, p = "abc"[i % 3], i % w.partitions
        offset = 1 + max(o for s, pp, o, _, _ in w.raw if (s, pp) == (stream, p))
        w.raw.append((stream, p, offset, w.raw[-1][3], value))
    return bad


def test_malformed_timestamps_are_counted_and_the_rest_computed(spark: Any, tmp_path: Path) -> None:
    """A `"yesterday"` timestamp fails no cast: the job completes with the oracle's results and counts it."""
    w = make_workload(TOPICS, partitions=2, records=600, keys=10, seed=5, malformed=6)
    _with_bad_timestamps(w)
    url = str(tmp_path / "archive")
    w.write_archive(url)
    lists = sum(value == b"[1, 2]" for *_, value in w.raw)  # no timestamp to read either
    assert lists > 0
    for kind, start, end in (("rows", 5, 300), ("range", 5, 300)):
        query = make_query(f"bad{kind}", kind, TOPICS)
        out = tmp_path / f"out-{kind}"
        summary = BackfillJob(spark, query, start, end, url).write(SinkSpec("parquet", str(out)))
        got, _ = read_ids(out)
        want = Oracle(query, w.events).ids(start, end)
        assert got == want and sum(want.values()) > 20
        reasons = summary.malformed_reasons
        assert reasons["missing timestamp field 'ts'"] == 1, reasons  # each unreadable one: once
        assert reasons["not a JSON object but list"] == lists, reasons
        assert reasons["timestamp field 'ts' is not a finite number"] >= 3, reasons
        assert summary.malformed == sum(reasons.values())
        if kind == "rows":  # one group per record: each counted exactly once
            assert reasons["timestamp field 'ts' is not a finite number"] == 3, reasons
