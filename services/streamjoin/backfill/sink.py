"""Where a back-fill task writes its results: the query's output topic, or Parquet files.

Each Spark task writes its own results (nothing goes back through the driver):
- `KafkaSink`: one record per result on the output topic, exactly as the live joiner writes it:
  value = the output JSON of docs/queries.md, "The output record" (with its `id`), key = the first equi-join
  attribute, header `id` = the result id, partition = input partition number `p` modulo the output
  topic's partition count. A back-filled result thus lands next to its live twin, and a consumer
  de-duplicates the two (or a retried task's repeats) by id; the header `sj-source: backfill` tells
  them apart (the joiner's own records carry `sj-query`/`sj-seq`, which it reads back on restart).
- `ParquetSink`: one file per task, `part-{task:05d}.parquet`, written under a hidden name and
  renamed when complete (locally; a single PUT on object stores), so a retried task replaces its file
  instead of adding a second one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from streamjoin.backfill.stage import ResultRow

__all__ = [
    "ID_HEADER",
    "RESULT_SCHEMA",
    "KafkaSink",
    "ParquetSink",
    "ResultSink",
    "SOURCE_HEADER",
    "SinkSpec",
    "open_directory",
    "open_sink",
]

ID_HEADER = "id"
SOURCE_HEADER = ("sj-source", b"backfill")
RESULT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("query", pa.string(), nullable=False),
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("key", pa.binary(), nullable=True),
        pa.field("value", pa.binary(), nullable=False),
    ]
)
"""Columns of a Parquet result file (`value`: the output record's JSON bytes, `id` included)."""


class ResultSink(Protocol):
    """Receive the result rows of one task."""

    def write(self, rows: list[ResultRow]) -> None:
        """Write a batch of result rows."""

    def close(self) -> None:
        """Make everything written durable and visible."""


@dataclass(frozen=True, slots=True)
class SinkSpec:
    """Where results go: `kind="kafka"` (target: topic) or `kind="parquet"` (target: directory URL)."""

    kind: Literal["kafka", "parquet"]
    target: str
    bootstrap: str | None = None
    kafka_config: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """More librdkafka properties of the producer: `client_security.librdkafka_options` as pairs
    (the spec travels to the executors; TLS files must be at the same paths there)."""


def open_sink(spec: SinkSpec, task: int) -> ResultSink:
    """Open the sink of task number `task`."""
    if spec.kind == "kafka":
        if spec.bootstrap is None:
            raise ValueError("a Kafka sink needs the broker address")
        return KafkaSink(spec.bootstrap, spec.target, config=dict(spec.kafka_config))
    return ParquetSink(spec.target, task)


def open_directory(url: str) -> tuple[pafs.FileSystem, str]:
    """Return the filesystem and path of a directory URL (a plain path is local), creating it locally."""
    if "://" in url:
        fs, path = pafs.FileSystem.from_uri(url)
    else:
        fs, path = pafs.LocalFileSystem(), os.path.abspath(url)
    if isinstance(fs, pafs.LocalFileSystem):
        fs.create_dir(path, recursive=True)
    return fs, path.rstrip("/")


class ParquetSink:
    """Write one task's results to `part-{task:05d}.parquet`, visible only when complete."""

    def __init__(self, url: str, task: int) -> None:
        self._fs, directory = open_directory(url)
        self._local = isinstance(self._fs, pafs.LocalFileSystem)
        self.path = f"{directory}/part-{task:05d}.parquet"
        self._tmp = (
            f"{directory}/.part-{task:05d}.parquet.tmp-{uuid.uuid4().hex}" if self._local else self.path
        )
        self._writer = pq.ParquetWriter(self._tmp, RESULT_SCHEMA, filesystem=self._fs, compression="zstd")

    def write(self, rows: list[ResultRow]) -> None:
        """Append rows as one row group."""
        if not rows:
            return
        columns = list(zip(*rows, strict=True))
        table = pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(columns, RESULT_SCHEMA, strict=True)],
            schema=RESULT_SCHEMA,
        )
        self._writer.write_table(table)

    def close(self) -> None:
        """Finish the file and move it into place."""
        self._writer.close()
        if self._local:
            self._fs.move(self._tmp, self.path)


class KafkaSink:
    """Produce one task's results to the output topic (idempotent producer, bounded flush)."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        flush_timeout_s: float = 60.0,
        config: Mapping[str, str] | None = None,
    ) -> None:
        """Open the producer of `topic` on `bootstrap`, with more librdkafka properties `config`."""
        from streamjoin.kafka.producer import new_producer, topic_partition_count

        self.topic = topic
        self._timeout = flush_timeout_s
        self._errors: list[str] = []
        self._producer = new_producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 20,
                "queue.buffering.max.messages": 200_000,
                **(config or {}),
            }
        )
        self._partitions = topic_partition_count(self._producer, topic, timeout_ms=30_000)
        if not self._partitions:
            raise RuntimeError(
                f"output topic {topic} does not exist (create it first: streamjoin topics create)"
            )

    def _delivered(self, err: object, _msg: object) -> None:
        if err is not None:
            self._errors.append(str(err))

    def write(self, rows: list[ResultRow]) -> None:
        """Queue the rows for delivery (waiting for room when the local queue is full)."""
        producer = self._producer
        partitions = self._partitions
        for rid, _query, _ts, partition, key, value in rows:
            while True:
                try:
                    producer.produce(
                        self.topic,
                        value,
                        key,
                        partition=partition % partitions,
                        headers=[(ID_HEADER, rid.encode()), SOURCE_HEADER],
                        on_delivery=self._delivered,
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)

    def close(self) -> None:
        """Wait until every result is delivered; raise if any failed."""
        left = self._producer.flush(self._timeout)
        if left:
            raise RuntimeError(f"{left} results were not delivered to {self.topic} within {self._timeout} s")
        if self._errors:
            raise RuntimeError(
                f"{len(self._errors)} results failed delivery to {self.topic}: {self._errors[0]}"
            )
