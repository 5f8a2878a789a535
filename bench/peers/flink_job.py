"""Count a workload's results with Flink SQL: streaming mode, event time, bounded CSV file sources,
a chain of interval joins (runs in the peers' virtual environment).

    python -m bench.peers.flink_job DIRECTORY [--parallelism 1] [--print-sql]

Each input is a table with its `ts` (BIGINT ms), an event-time column `rt` (watermark = rt: the
files are in timestamp order) and its fields. Flink plans a join as an interval join only on the
first bound written on time attributes, so each join bounds `rt` against the first input's and
every other pair on plain `ts` (joinplan.py). The count is a streaming COUNT(*) with mini-batches;
its last update is the result count.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.peers.jobutil import finish
from bench.peers.joinplan import Step, load, plan

__all__ = ["count_sql", "join_sql", "main"]


def _interval(ms: int) -> str:
    return f"INTERVAL '{ms // 1000}.{ms % 1000:03d}' SECOND"


def ddl(directory: Path, step: Step) -> str:
    """Return the CREATE TABLE of one input."""
    columns = ", ".join(f"`{f}` BIGINT" for f in step.fields)
    return (
        f"CREATE TEMPORARY TABLE `{step.stream}` (ts BIGINT, {columns}, rt AS TO_TIMESTAMP_LTZ(ts, 3), "
        f"WATERMARK FOR rt AS rt) WITH ('connector' = 'filesystem', "
        f"'path' = '{(directory / step.stream).resolve()}', 'format' = 'csv')"
    )


def count_sql(steps: list[Step]) -> str:
    """Return the SELECT COUNT(*) over the chain of joins."""
    return f"SELECT COUNT(*) {join_sql(steps)}"


def join_sql(steps: list[Step]) -> str:
    """Return the FROM clause of the chain of interval joins."""
    sql = f"FROM `{steps[0].stream}`"
    for step in steps[1:]:
        n = step.stream
        conditions = [f"`{old}`.`{of}` = `{n}`.`{nf}`" for old, of, nf in step.equalities]
        for b in step.bounds:
            if b.event_time:
                low, high = _interval(b.below_ms), _interval(b.above_ms)
                conditions.append(f"`{n}`.rt BETWEEN `{b.old}`.rt - {low} AND `{b.old}`.rt + {high}")
            else:
                conditions.append(
                    f"`{n}`.ts BETWEEN `{b.old}`.ts - {b.below_ms} AND `{b.old}`.ts + {b.above_ms}"
                )
        sql += f" JOIN `{n}` ON " + " AND ".join(conditions)
    return sql


def main() -> None:
    """Run the count and print {"results": N, "peak_rss_kb": ...}."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--print-sql", action="store_true")
    args = parser.parse_args()
    steps = plan(load(args.directory))
    query = count_sql(steps)
    if args.print_sql:
        print(query)
        return
    from pyflink.table import EnvironmentSettings, TableEnvironment  # type: ignore[import-not-found]

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(args.parallelism))
    config.set("table.exec.mini-batch.enabled", "true")
    config.set("table.exec.mini-batch.allow-latency", "1 s")
    config.set("table.exec.mini-batch.size", "100000")
    for step in steps:
        env.execute_sql(ddl(args.directory, step))
    results = 0
    with env.execute_sql(query).collect() as rows:
        for row in rows:
            results = int(row[0])  # the last update of the count is the count
    finish(results, lambda: None)


if __name__ == "__main__":
    main()
