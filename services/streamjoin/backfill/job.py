"""The back-fill as a Spark job: read the archive, group, run the shared engine per group, write.

The plan (docs/backfill.md):

1. **Read** the archive files of every input topic (hour directories are pruned for inputs timed by
   the Kafka timestamp) and keep each input's records of `plan.py`'s range, using a native
   `get_json_object` timestamp; the exact timestamp is read again by the engine's `RecordReader`.
2. **Rows history**: for a rows window, the records before `start` go through `HistoryDecoder`
   (exact validity and `partition_by` group), and a window function keeps the last `N` per group.
3. **Group**: the group of a record is its operator partition (`routing.py`: its partition number
   for a directly read input, the internal partition the live repartitioner gives it for a re-keyed
   one) and, for range-only queries, each time bucket its results may fall in
   (`explode(sequence(first, last))`).
4. **Shuffle** by group into `tasks` Spark partitions (group ids are spread evenly over them), sort
   each by (group, ts, input, partition, offset), and run `GroupRunner` over it with `mapInPandas`:
   batches stream through the engine, so a group never has to fit in memory.
5. **Write** from the tasks themselves (`sink.py`); only one statistics row per task comes back.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import pandas_udf

from streamjoin.archiver.layout import ArchiveFile, ArchiveLayout
from streamjoin.backfill.codecs import decoder_of, need_registry_url, timestamps
from streamjoin.backfill.files import archive_files, history_from, require_files
from streamjoin.backfill.history import HistoryDecoder
from streamjoin.backfill.plan import BackfillPlan, InputFeed, Strategy, plan_backfill
from streamjoin.backfill.progress import JobProgress, ProgressPoller
from streamjoin.backfill.routing import Router, archive_partition_counts
from streamjoin.backfill.sink import SinkSpec, open_directory, open_sink
from streamjoin.backfill.spark_hash import spark_hash_long, task_keys
from streamjoin.backfill.stage import FEED_COLUMNS, STATS_COLUMNS, GroupRunner
from streamjoin.query.model import QueryDef
from streamjoin.query.partitioning import PartitioningPlan, plan_partitioning

__all__ = ["BackfillJob", "BackfillSummary", "spark_hash_long", "task_keys"]

_ARCHIVE_DDL = "topic string, partition int, offset long, timestamp long, key binary, value binary"
_HISTORY_DDL = (
    "input int, opart int, partition int, offset long, ts double, kafka_ts long, value binary, gkey string"
)
_RESULT_DDL = "id string, query string, ts double, partition int, key binary, value binary"
_STATS_DDL = ", ".join(f"{c} long" for c in STATS_COLUMNS) + ", reasons string"
_SIMPLE_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class BackfillSummary:
    """What a finished back-fill did."""

    query: str
    start: float
    end: float
    strategy: str
    files: int
    groups: int
    tasks: int
    records: int
    """Records fed to the engines (a record in two overlapping time buckets counts twice)."""
    malformed: int
    """Records the engine refused, each with its reason: as the joiner dead-letters them."""
    malformed_reasons: dict[str, int]
    """The count of malformed records per reason (the reason up to its first colon)."""
    duplicates: int
    late: int
    """Records the engine found late (0 unless a timestamp is too large for a double to order)."""
    results: int
    seconds: float
    stage_cpu_seconds: float
    """CPU time of the engine stage's Python workers, summed over tasks."""

    def as_dict(self) -> dict[str, Any]:
        """Return the summary as a JSON-able dict."""
        return asdict(self)


class BackfillJob:
    """Compute one query's results over an archived time range with Spark."""

    def __init__(
        self,
        spark: SparkSession,
        query: QueryDef,
        start: float,
        end: float,
        archive_url: str,
        *,
        tasks: int | None = None,
        rows_lookback: float | None = None,
        strategy: Strategy | None = None,
        partition_counts: Mapping[str, int] | None = None,
        schema_registry_url: str | None = None,
    ) -> None:
        """Prepare the back-fill of `query` over `[start, end)` (results by `t_max`).

        Args:
            spark: the session to run in.
            query: the validated query.
            start: first `t_max` included, in the query's timestamp unit.
            end: first `t_max` excluded.
            archive_url: the archive to read (`STREAMJOIN_ARCHIVE_URL`).
            tasks: Spark tasks of the join stage (default: `spark.sql.shuffle.partitions`).
            rows_lookback: optional bound on the rows-window history read before `start`.
            strategy: force `partition` or `partition-time` (default: chosen by `plan_backfill`).
            partition_counts: the partition count of input topics, for the partitioning plan
                (default: as the archive shows them, `archive_partition_counts`).
            schema_registry_url: the registry Avro inputs' schemas are read from (needed with any).

        Raises:
            ValueError: the query has Avro inputs and no registry URL is given.
            EmptyArchiveError: the range needs no archived file (a `ValueError` too).
        """
        need_registry_url(query, schema_registry_url)
        self.registry_url = schema_registry_url
        self.spark = spark
        self.layout = ArchiveLayout(archive_url)
        self.files: dict[str, list[ArchiveFile]] = archive_files(self.layout, query)
        counts = archive_partition_counts(self.files) | dict(partition_counts or {})
        self.partitioning: PartitioningPlan = plan_partitioning(query, counts)
        """How the live joiner partitions the query (direct or re-keyed inputs): the grouping."""
        self.router = Router(self.partitioning)
        partitions = self.partitioning.partitions
        self.tasks = tasks or int(spark.conf.get("spark.sql.shuffle.partitions") or 4)
        self.plan: BackfillPlan = plan_backfill(
            query,
            start,
            end,
            target_groups=4 * self.tasks,
            partitions=partitions,
            rows_lookback=rows_lookback,
            strategy=strategy,
        )
        self._selected = require_files(self.plan, self.layout, self.files)
        """The files each input reads, by input index (never none at all: `EmptyArchiveError`)."""
        self.partitions = partitions
        self.files_read = 0
        self.join_tasks = 1
        """Spark tasks of the engine stage (known once `feed()` has been built)."""

    # -- the feed ---------------------------------------------------------------------------

    def feed(self) -> DataFrame:
        """Return the engine's input: `FEED_COLUMNS`, shuffled by group and sorted within tasks."""
        plan = self.plan
        parts = [part for feed in plan.feeds for part in self._feed_parts(feed)]
        if not parts:
            return self.spark.createDataFrame([], "grp long, input int, partition int, offset long, "
                                                  "ts double, kafka_ts long, value binary")  # fmt: skip
        merged = parts[0]
        for part in parts[1:]:
            merged = merged.unionByName(part)
        groups = self.plan.buckets * self.partitions
        tasks = self.join_tasks = max(1, min(self.tasks, groups))
        keys = task_keys(tasks)
        task = F.element_at(
            F.array(*[F.lit(k).cast("long") for k in keys]),
            (F.pmod(F.col("grp"), F.lit(tasks)) + 1).cast("int"),
        )
        return (
            merged.withColumn("task", task)
            .repartition(tasks, "task")
            .sortWithinPartitions("grp", "ts", "input", "partition", "offset")
            .select(*FEED_COLUMNS)
        )

    def _feed_parts(self, feed: InputFeed) -> list[DataFrame]:
        plan = self.plan
        raw = self._read(feed)
        if raw is None:
            return []
        ts = F.col("ts")
        current = raw.where(ts.isNotNull() & (ts >= F.lit(feed.lower)) & (ts < F.lit(plan.end)))
        parts = [self._grouped(current, feed)]
        if feed.timestamp is not None:  # no readable time: no range to place it in, so counted once
            unreadable = raw.where(ts.isNull())
            parts.append(unreadable.withColumn("grp", F.col("opart").cast("long") * F.lit(plan.buckets)))
        if feed.rows is not None:
            parts.append(self._grouped(self._history(raw, feed, history_from(plan, feed)), feed))
        return parts

    def _read(self, feed: InputFeed) -> DataFrame | None:
        """Return the input's archived records as (input, opart, partition, offset, ts, kafka_ts, value)."""
        files = self._selected[feed.index]  # timed by the Kafka timestamp: only the hours it needs
        if not files:
            return None
        self.files_read += len(files)
        raw = self.spark.read.schema(_ARCHIVE_DDL).parquet(*[self.layout.uri(f) for f in files])
        return raw.select(
            F.lit(feed.index).cast("int").alias("input"),
            self._operator_partition(feed.index).alias("opart"),
            F.col("partition"),
            F.col("offset"),
            self._timestamp(feed).alias("ts"),
            F.col("timestamp").alias("kafka_ts"),
            F.col("value"),
        )

    def _history(self, raw: DataFrame, feed: InputFeed, history_from: float) -> DataFrame:
        """Return the last `rows` valid records before `start` of every rows group of `feed`."""
        plan = self.plan
        ts = F.col("ts")
        before = raw.where(ts.isNotNull() & (ts < F.lit(plan.start)) & (ts >= F.lit(history_from)))

        url = self.registry_url

        def decode(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            return HistoryDecoder(plan, registry_url=url).frames(batches)

        decoded = before.mapInPandas(decode, _HISTORY_DDL)
        newest = Window.partitionBy("input", "opart", "partition", "gkey").orderBy(
            F.desc("ts"), F.desc("offset")
        )
        return (
            decoded.withColumn("rank", F.row_number().over(newest))
            .where(F.col("rank") <= F.lit(feed.rows))
            .select("input", "opart", "partition", "offset", "ts", "kafka_ts", "value")
        )

    def _timestamp(self, feed: InputFeed) -> Column:
        """Return the record timestamp as a double: natively for JSON, as the joiner decodes Avro."""
        if feed.timestamp is None or self.plan.query.inputs[feed.index].format != "avro":
            return _timestamp(feed)
        query, url, index, stream = self.plan.query, self.registry_url, feed.index, feed.stream

        def read(batches: Iterator[tuple[pd.Series, pd.Series]]) -> Iterator[pd.Series]:
            decode = decoder_of(query, index, url)  # one decoder (and schema cache) per task
            for values, kts in batches:
                yield pd.Series(timestamps(decode, stream, values.tolist(), kts.tolist()), dtype="float64")

        column: Column = pandas_udf(read, "double")(F.col("value"), F.col("timestamp"))  # type: ignore[call-overload]
        return column

    def _operator_partition(self, index: int) -> Column:
        """Return the operator partition of a record of input `index`, as the live joiner picks it."""
        router = self.router
        if not router.is_rekeyed(index):
            return F.col("partition")
        if router.partitions == 1:
            return F.lit(0).cast("int")

        def route(values: pd.Series, sources: pd.Series) -> pd.Series:
            return pd.Series(router.partitions_of(index, values.tolist(), sources.tolist()), dtype="int32")

        column: Column = pandas_udf(route, "int")(F.col("value"), F.col("partition"))  # type: ignore[call-overload]
        return column

    def _grouped(self, records: DataFrame, feed: InputFeed) -> DataFrame:
        """Add the group id; a record of a range input goes to every time bucket it can serve."""
        plan = self.plan
        if plan.buckets == 1:
            return records.withColumn("grp", F.col("opart").cast("long"))
        ts = F.col("ts")
        first = _bucket(ts, plan)
        last = _bucket(ts + F.lit(feed.reach), plan)
        bucket = F.explode(F.sequence(first, last))
        return (
            records.withColumn("bucket", bucket)
            .withColumn("grp", F.col("opart").cast("long") * F.lit(plan.buckets) + F.col("bucket"))
            .drop("bucket")
        )

    # -- running ----------------------------------------------------------------------------

    def results(self) -> DataFrame:
        """Return the results as a DataFrame (id, query, ts, partition, key, value), lazily."""
        plan = self.plan

        url = self.registry_url

        def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            return GroupRunner(plan, registry_url=url).frames(batches)

        return self.feed().mapInPandas(run, _RESULT_DDL)

    def write(
        self,
        sink: SinkSpec,
        *,
        on_progress: Callable[[JobProgress], None] | None = None,
        poll_s: float = 0.5,
    ) -> BackfillSummary:
        """Run the back-fill, each task writing its results to `sink`; return the summary."""
        plan = self.plan
        started = time.monotonic()
        if sink.kind == "parquet":
            _clear_parts(sink.target)

        context = self.spark.sparkContext
        finished, url = context.accumulator(0), self.registry_url

        def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            from pyspark import TaskContext

            cpu = time.process_time()
            context = TaskContext.get()
            task = context.partitionId() if context is not None else 0
            runner = GroupRunner(plan, registry_url=url)
            out = open_sink(sink, task)
            for rows in runner.run(batches):
                out.write(rows)
            out.close()
            runner.stats.cpu_ms = round((time.process_time() - cpu) * 1000)
            finished.add(1)
            reasons = json.dumps(runner.stats.malformed_reasons)
            yield pd.DataFrame([(*runner.stats.as_row(), reasons)], columns=[*STATS_COLUMNS, "reasons"])

        frame = self.feed().mapInPandas(run, _STATS_DDL)
        tasks = self.join_tasks
        group = f"streamjoin-backfill-{uuid.uuid4().hex[:8]}"
        context.setJobGroup(group, f"back-fill {plan.query.name} [{plan.start}, {plan.end})", True)
        poller = None
        if on_progress is not None:
            poller = ProgressPoller(self.spark, group, on_progress, poll_s, lambda: (finished.value, tasks))
        succeeded = False
        try:
            rows = frame.collect()
            succeeded = True
        finally:
            if poller is not None:
                poller.stop(finished=succeeded)
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        totals = dict.fromkeys(STATS_COLUMNS, 0)
        reasons: Counter[str] = Counter()
        for row in rows:
            for name in STATS_COLUMNS:
                totals[name] += int(row[name])
            reasons.update(json.loads(row["reasons"]))
        return BackfillSummary(
            query=plan.query.name,
            start=plan.start,
            end=plan.end,
            strategy=plan.strategy,
            files=self.files_read,
            groups=totals["groups"],
            tasks=len(rows),
            records=totals["records"],
            malformed=totals["malformed"],
            malformed_reasons=dict(sorted(reasons.items())),
            duplicates=totals["duplicates"],
            late=totals["late"],
            results=totals["results"],
            seconds=time.monotonic() - started,
            stage_cpu_seconds=totals["cpu_ms"] / 1000,
        )


def _timestamp(feed: InputFeed) -> Column:
    """Return the record timestamp as a double, natively (null when missing or not a number).

    `try_cast`: a value such as `"yesterday"` is null here, never a failed job; the engine's reader
    then refuses the record with its reason.
    """
    if feed.timestamp is None:
        return F.col("timestamp").try_cast("double")
    field = feed.timestamp
    path = f"$.{field}" if _SIMPLE_FIELD.fullmatch(field) else "$['" + field.replace("'", "\\'") + "']"
    return F.get_json_object(F.col("value").cast("string"), path).try_cast("double")


def _bucket(ts: Column, plan: BackfillPlan) -> Column:
    """Return `plan.bucket_of(ts)` as a Spark expression (the same double arithmetic)."""
    raw = F.floor((ts - F.lit(plan.start)) / F.lit(plan.bucket_width))
    return F.least(F.lit(plan.buckets - 1).cast("long"), F.greatest(F.lit(0).cast("long"), raw))


def _clear_parts(url: str) -> None:
    """Delete the result files of an earlier run in an output directory (`--out` is overwritten)."""
    import pyarrow.fs as pafs

    fs, path = open_directory(url)
    for info in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
        name = info.base_name
        if info.type == pafs.FileType.File and (name.startswith("part-") or name.startswith(".part-")):
            fs.delete_file(info.path)
