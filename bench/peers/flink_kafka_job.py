"""Flink SQL as one system of the Kafka mode: the workload's join from the input topics into an
output topic, every result a JSON record (runs in the peers' virtual environment).

    python -m bench.peers.flink_kafka_job DIRECTORY --bootstrap B --topics JSON --output TOPIC
        --jars JAR[,JAR] [--parallelism 1] [--print-sql]

The inputs are Kafka tables (JSON values, `earliest-offset`) with the event-time column `rt` and a
watermark on it; the join is `flink_job.join_sql`'s chain of interval joins; the sink is a Kafka
table whose record is `{"ts": youngest member's ts, "<stream>_<field>": ..., ...}`. Streaming mode,
no checkpointing (Flink's default). Runs until stopped.
"""

from __future__ import annotations

from pathlib import Path

from bench.peers.flink_job import join_sql
from bench.peers.jobutil import kafka_job_parser
from bench.peers.joinplan import Step, load, plan

__all__ = ["insert_sql", "main", "tables_sql"]


def _kafka(topic: str, bootstrap: str) -> str:
    return (
        f"'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}', "
        "'format' = 'json'"
    )


def tables_sql(steps: list[Step], topics: dict[str, str], output: str, bootstrap: str) -> list[str]:
    """Return the CREATE TABLE of every input and of the sink."""
    statements = []
    for step in steps:
        columns = ", ".join(f"`{f}` BIGINT" for f in step.fields)
        statements.append(
            f"CREATE TEMPORARY TABLE `{step.stream}` (ts BIGINT, {columns}, "
            f"rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt) WITH ("
            f"{_kafka(topics[step.stream], bootstrap)}, 'scan.startup.mode' = 'earliest-offset', "
            f"'properties.group.id' = 'peers-flink-{output}')"
        )
    columns = ", ".join(f"`{s.stream}_{f}` BIGINT" for s in steps for f in ("ts", *s.fields))
    statements.append(
        f"CREATE TEMPORARY TABLE `out` (ts BIGINT, {columns}) WITH ({_kafka(output, bootstrap)})"
    )
    return statements


def insert_sql(steps: list[Step]) -> str:
    """Return the INSERT of every result into the sink."""
    youngest = ", ".join(f"`{s.stream}`.ts" for s in steps)
    members = ", ".join(f"`{s.stream}`.`{f}`" for s in steps for f in ("ts", *s.fields))
    return f"INSERT INTO `out` SELECT GREATEST({youngest}), {members} {join_sql(steps)}"


def main() -> None:
    """Run the job until stopped."""
    parser = kafka_job_parser(__doc__.splitlines()[0])
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--print-sql", action="store_true")
    args = parser.parse_args()
    steps = plan(load(args.directory))
    statements = [*tables_sql(steps, args.topics, args.output, args.bootstrap), insert_sql(steps)]
    if args.print_sql:
        print(";\n".join(statements))
        return
    from pyflink.table import EnvironmentSettings, TableEnvironment  # type: ignore[import-not-found]

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(args.parallelism))
    config.set("pipeline.jars", ";".join(Path(j).resolve().as_uri() for j in args.jars.split(",")))
    for statement in statements[:-1]:
        env.execute_sql(statement)
    env.execute_sql(statements[-1]).wait()


if __name__ == "__main__":
    main()
