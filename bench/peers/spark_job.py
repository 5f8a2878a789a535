"""Count a workload's results with Spark Structured Streaming: CSV file sources, event time,
stream-stream joins with time bounds, `availableNow` (runs in the peers' virtual environment).

    python -m bench.peers.spark_job DIRECTORY [--master local[2]] [--shuffle-partitions 2]

Each input's columns are prefixed with its name (`a_ts`, `a_k`, `a_rt`); `rt` is the event time
with a watermark of the largest window. Spark refuses a join whose output has several event-time
columns (MULTIPLE_EVENT_TIME_COLUMNS), so after each join only the first input's `rt` is kept: each
join bounds the new input's `rt` against it, and every other pair on plain `ts` (joinplan.py).
Each input is one file, so the whole input is one micro-batch; the count is summed in
`foreachBatch`.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bench.peers.jobutil import finish
from bench.peers.joinplan import Step, load, plan

__all__ = ["condition", "main", "session", "with_event_time"]


def condition(step: Step) -> str:
    """Return the join condition of `step` as a Spark SQL expression."""
    n = step.stream
    parts = [f"{old}_{of} = {n}_{nf}" for old, of, nf in step.equalities]
    for b in step.bounds:
        col = "rt" if b.event_time else "ts"
        unit = " MILLISECONDS" if b.event_time else ""
        below = f"INTERVAL {b.below_ms}{unit}" if b.event_time else str(b.below_ms)
        above = f"INTERVAL {b.above_ms}{unit}" if b.event_time else str(b.above_ms)
        parts.append(f"{n}_{col} BETWEEN {b.old}_{col} - {below} AND {b.old}_{col} + {above}")
    return " AND ".join(parts)


def session(master: str, shuffle_partitions: int, jars: str | None = None) -> Any:
    """Return the Spark session of a peer job (`jars`: more jars, comma-separated)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master)
    if jars:
        builder = builder.config("spark.jars", jars)
    spark = (
        builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.streaming.statefulOperator.checkCorrectness.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def with_event_time(frame: Any, stream: str, lateness_ms: int) -> Any:
    """Return `frame` with the event-time column `<stream>_rt` and a watermark `lateness_ms` behind."""
    from pyspark.sql import functions as F

    frame = frame.withColumn(f"{stream}_rt", F.timestamp_millis(f"{stream}_ts"))
    return frame.withWatermark(f"{stream}_rt", f"{lateness_ms} milliseconds")


def main() -> None:
    """Run the count and print {"results": N, "peak_rss_kb": ...}."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    args = parser.parse_args()
    definition = load(args.directory)
    steps = plan(definition)
    lateness_ms = max(int(s["window_ms"]) for s in definition["streams"])

    from pyspark.sql import functions as F

    spark = session(args.master, args.shuffle_partitions)

    def source(step: Step) -> Any:
        schema = ", ".join(f"{step.stream}_{c} LONG" for c in ("ts", *step.fields))
        frame = spark.readStream.schema(schema).csv(str((args.directory / step.stream).resolve()))
        return with_event_time(frame, step.stream, lateness_ms)

    joined = source(steps[0])
    for step in steps[1:]:
        joined = joined.join(source(step), F.expr(condition(step))).drop(f"{step.stream}_rt")
    counts: list[int] = []
    with tempfile.TemporaryDirectory(prefix="peers-spark-") as checkpoint:
        query = (
            joined.writeStream.foreachBatch(lambda frame, _batch: counts.append(frame.count()))
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        finish(sum(counts), spark.stop)


if __name__ == "__main__":
    main()
