"""Back-fill benchmark: input records/s of the Spark back-fill in local mode, on the joiner's workload.

The workload is `joiner_throughput.py`'s, so the two figures compare: a 3-way equi-join
(a.k = b.k = c.k, range windows of 1000) where each key gets two records per stream, 6 input records
making 8 results; `ts = i // 10`; 4 partitions (key mod 4). The archive is written directly as
Parquet (no broker), then `BackfillJob` runs over all of it in `local[2]` and writes the results to
Parquet. Reported: input records / wall time of the job (the SparkSession start is shown apart).

    python bench/backfill_throughput.py --records 1000000
    python bench/backfill_throughput.py --records 1000000 --kind rows   # the partition strategy

With `--engine` it also times the shared engine alone on one core over the same records (no Spark,
no Kafka), the ceiling of one Spark task.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from streamjoin.archiver import ArchiveLayout, ArchiveWriter, PartitionBuffer
from streamjoin.query import QueryDef, parse_query

PARTITIONS = 4
STREAMS = "abc"
KAFKA_TS_BASE = 1_714_571_000_000


def query(kind: str) -> QueryDef:
    """Return the benchmark query: range windows of 1000, or rows windows of 6 for `kind="rows"`."""
    window: dict[str, Any] = {"range": 1000} if kind == "range" else {"rows": 6}
    return parse_query(
        {
            "name": f"bench-{kind}",
            "inputs": [
                {"stream": s, "topic": f"bench.{s}", "timestamp": "ts", "window": window} for s in STREAMS
            ],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
            "output": {"topic": "bench.out"},
        }
    )


def record(i: int) -> tuple[str, int, int, bytes]:
    """Return (stream, partition, ts, value) of record i: key i // 6, streams a b c a b c."""
    k, ts = i // 6, i // 10
    value = b'{"ts":%d,"k":%d,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}' % (ts, k)
    return STREAMS[i % 3], k % PARTITIONS, ts, value


def write_archive(root: Path, n: int) -> float:
    """Write n records into an archive at `root` (100k-record files); return the seconds taken."""
    started = time.monotonic()
    writer = ArchiveWriter(ArchiveLayout(str(root)))
    buffers = {(s, p): PartitionBuffer(f"bench.{s}", p) for s in STREAMS for p in range(PARTITIONS)}
    offsets = dict.fromkeys(buffers, 0)
    for i in range(n):
        stream, p, ts, value = record(i)
        buffer = buffers[(stream, p)]
        buffer.append(offsets[(stream, p)], KAFKA_TS_BASE + ts, None, value)
        offsets[(stream, p)] += 1
        if len(buffer) >= 100_000:
            writer.flush(buffer)
    for buffer in buffers.values():
        if buffer:
            writer.flush(buffer)
    return time.monotonic() - started


def expected_results(n: int) -> int:
    """Return the results of the first n records: 8 per complete key, a * b * c for the last one."""
    rest = n % 6  # the last key's records, in stream order a b c a b c
    a, b, c = (rest > 0) + (rest > 3), (rest > 1) + (rest > 4), int(rest > 2)
    return 8 * (n // 6) + a * b * c


def engine_alone(q: QueryDef, n: int) -> float:
    """Return the records/s of the shared engine alone over partition 0's records (one core)."""
    from streamjoin.engine import MultiJoin, RecordReader

    reader = RecordReader(q)
    records = [(s, p, value) for s, p, _, value in map(record, range(n)) if p == 0]
    engine = MultiJoin(q, partitions={s: [0] for s in STREAMS})
    offsets = dict.fromkeys(STREAMS, 0)
    started = time.monotonic()
    for i, (stream, p, value) in enumerate(records):
        ts, rec = reader.decode(stream, value)
        engine.add(stream, rec, ts=ts, partition=p, offset=offsets[stream], size=len(value))
        offsets[stream] += 1
        if i % 512 == 0:
            engine.advance()
    engine.finish()
    return len(records) / (time.monotonic() - started)


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--kind", choices=["range", "rows"], default="range")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--engine", action="store_true", help="also time the engine alone on one core")
    args = parser.parse_args()

    from streamjoin.backfill.job import BackfillJob
    from streamjoin.backfill.session import spark_session
    from streamjoin.backfill.sink import SinkSpec

    workdir = Path(tempfile.mkdtemp(prefix="streamjoin-bench-"))
    try:
        q = query(args.kind)
        archive_s = write_archive(workdir / "archive", args.records)
        started = time.monotonic()
        spark = spark_session(args.master, shuffle_partitions=args.tasks, driver_memory=args.driver_memory)
        session_s = time.monotonic() - started
        try:
            job = BackfillJob(spark, q, 0, args.records // 10 + 1, str(workdir / "archive"), tasks=args.tasks)
            summary = job.write(SinkSpec("parquet", str(workdir / "out")))
        finally:
            spark.stop()
        want = expected_results(args.records)
        if summary.results != want:
            raise SystemExit(f"expected {want} results, got {summary.results}")
        report: dict[str, Any] = {
            "records": args.records,
            "kind": args.kind,
            "strategy": summary.strategy,
            "master": args.master,
            "tasks": summary.tasks,
            "groups": summary.groups,
            "results": summary.results,
            "archive_write_s": round(archive_s, 1),
            "session_start_s": round(session_s, 1),
            "job_s": round(summary.seconds, 1),
            "input_records_per_s": round(args.records / summary.seconds),
            "stage_cpu_s": round(summary.stage_cpu_seconds, 1),
            "input_records_per_stage_cpu_s": round(args.records / summary.stage_cpu_seconds),
            "load_average": os.getloadavg()[0],
            "fed_records": summary.records,
        }
        if args.engine:
            report["engine_alone_records_per_s"] = round(engine_alone(q, args.records))
        print(json.dumps(report))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
