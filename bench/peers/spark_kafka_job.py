"""Spark Structured Streaming as one system of the Kafka mode: the workload's join from the input
topics into an output topic, every result a JSON record (runs in the peers' virtual environment).

    python -m bench.peers.spark_kafka_job DIRECTORY --bootstrap B --topics JSON --output TOPIC
        --jars JAR[,JAR...] [--master local[2]] [--shuffle-partitions 2]

Kafka sources (`earliest`, JSON values parsed with `from_json`), columns prefixed with the input's
name and a watermark of the largest window on `rt`, as `spark_job.py`; the same joins
(`spark_job.condition`); the Kafka sink writes `{"ts": youngest member's ts, "<stream>_<field>":
..., ...}`. Micro-batches one after the other (the default trigger), a checkpoint in a temporary
folder. Runs until stopped.
"""

from __future__ import annotations

import tempfile
from typing import Any

from bench.peers.jobutil import kafka_job_parser
from bench.peers.joinplan import Step, load, plan
from bench.peers.spark_job import condition, session, with_event_time

__all__ = ["main"]


def main() -> None:
    """Run the query until stopped."""
    parser = kafka_job_parser(__doc__.splitlines()[0])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    args = parser.parse_args()
    definition = load(args.directory)
    steps = plan(definition)
    lateness_ms = max(int(s["window_ms"]) for s in definition["streams"])

    from pyspark.sql import functions as F

    spark = session(args.master, args.shuffle_partitions, args.jars)

    def source(step: Step) -> Any:
        columns = ("ts", *step.fields)
        schema = ", ".join(f"`{c}` LONG" for c in columns)
        frame = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("subscribe", args.topics[step.stream])
            .option("startingOffsets", "earliest")
            .load()
        )
        frame = frame.select(F.from_json(F.col("value").cast("string"), schema).alias("r"))
        frame = frame.select(*[F.col(f"r.`{c}`").alias(f"{step.stream}_{c}") for c in columns])
        return with_event_time(frame, step.stream, lateness_ms)

    joined = source(steps[0])
    for step in steps[1:]:
        joined = joined.join(source(step), F.expr(condition(step))).drop(f"{step.stream}_rt")
    members = [f"{s.stream}_{c}" for s in steps for c in ("ts", *s.fields)]
    youngest = F.greatest(*[F.col(f"{s.stream}_ts") for s in steps]).alias("ts")
    value = F.to_json(F.struct(youngest, *[F.col(m) for m in members])).alias("value")
    with tempfile.TemporaryDirectory(prefix="peers-spark-") as checkpoint:
        query = (
            joined.drop(f"{steps[0].stream}_rt")
            .select(value)
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("topic", args.output)
            .option("checkpointLocation", checkpoint)
            .start()
        )
        query.awaitTermination()


if __name__ == "__main__":
    main()
