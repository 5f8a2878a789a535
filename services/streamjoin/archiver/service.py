"""The archiver service: copy input topics into the Parquet archive, exactly once, and report lag.

Contract:
- **start**: the archive is listed; each topic partition resumes one past the largest offset any of
  its files holds (`ArchiveLayout.resume_offsets`), or at `start` (earliest/latest) if it has none.
  Leftover temporary files of a crashed run are deleted. No consumer group, no committed offsets:
  the files are the only record of progress, so nothing can disagree with them.
- **on records**: they are appended to their partition's buffer; a buffer is flushed (written as
  complete files, `writer.py`) when it holds `flush_records` records or `flush_bytes` bytes, or its
  oldest record waited `flush_interval_ms`.
- **on SIGTERM** (`stop()`): every buffer is flushed and the consumer closed, well within 10 s.
- **after a crash** (SIGKILL anywhere): a file is either whole and counted, or absent and its records
  are fetched again; the next file starts after the last complete one. Nothing is lost (as long as the
  broker still retains it) and nothing is written twice.

The consumer is aiokafka's (librdkafka's consumer is slow against the embedded broker); partitions
are assigned manually, so run one archiver per set of topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from streamjoin.archiver.layout import ArchiveFile, ArchiveLayout
from streamjoin.archiver.metrics import ArchiverMetrics
from streamjoin.archiver.writer import ArchiveWriter, PartitionBuffer
from streamjoin.kafka import Consumer, TopicPartition, partitions_of, reader

__all__ = ["Archiver", "ArchiverConfig", "topics_from"]

_log = logging.getLogger(__name__)
_DISCOVER_EVERY_S = 10.0


@dataclass(frozen=True, slots=True)
class ArchiverConfig:
    """What to archive, where, and how often to write."""

    bootstrap: str
    archive_url: str
    topics: tuple[str, ...]
    start: Literal["earliest", "latest"] = "earliest"
    flush_records: int = 200_000
    flush_bytes: int = 64 * 1024 * 1024
    flush_interval_ms: int = 5_000
    fetch_max_records: int = 20_000
    metrics_port: int | None = None
    """Port of `/metrics` (0: any free port, None: not served)."""
    metrics_host: str = "127.0.0.1"
    """Address `/metrics` listens on (0.0.0.0 for a Prometheus in another container or pod)."""
    kafka_options: Mapping[str, Any] = field(default_factory=dict)
    """More consumer arguments: the security options of `client_security.aiokafka_options`."""


class Archiver:
    """Run the archive loop of one `ArchiverConfig` until `stop()`."""

    def __init__(self, config: ArchiverConfig, *, metrics: ArchiverMetrics | None = None) -> None:
        if not config.topics:
            raise ValueError("the archiver needs at least one topic")
        self.config = config
        self.layout = ArchiveLayout(config.archive_url)
        self.writer = ArchiveWriter(self.layout)
        self.metrics = metrics or ArchiverMetrics()
        self._buffers: dict[TopicPartition, PartitionBuffer] = {}
        self._oldest: dict[TopicPartition, float] = {}  # monotonic time of a buffer's first record
        self._next: dict[TopicPartition, int] = {}  # next offset to archive
        self._stop = asyncio.Event()
        self.files_written: list[ArchiveFile] = []

    def stop(self) -> None:
        """Ask the loop to flush what it holds and return (safe from a signal handler)."""
        self._stop.set()

    async def run(self) -> None:
        """Archive until `stop()`; flush everything buffered before returning."""
        for leftover in self.layout.temporary_files(self.config.topics):
            _log.info("deleting leftover temporary file %s", leftover)
            self.layout.fs.delete_file(leftover)
        if self.config.metrics_port is not None:
            port = self.metrics.serve(self.config.metrics_port, self.config.metrics_host)
            _log.info("metrics on http://%s:%d/metrics", self.config.metrics_host, port)
        consumer = reader(
            self.config.bootstrap, options=self.config.kafka_options, client_id="streamjoin-archiver"
        )
        await consumer.start()
        try:
            await self._loop(consumer)
        finally:
            self._flush_all()
            await consumer.stop()
            self.metrics.close()

    async def _loop(self, consumer: Consumer) -> None:
        discovered_at = -_DISCOVER_EVERY_S
        while not self._stop.is_set():
            now = time.monotonic()
            if now - discovered_at >= _DISCOVER_EVERY_S:
                discovered_at = now
                await self._discover(consumer)
            if not self._buffers:
                await self._sleep(0.2)
                continue
            batches = await consumer.getmany(timeout_ms=200, max_records=self.config.fetch_max_records)
            now = time.monotonic()
            for tp, records in batches.items():
                buffer = self._buffers[tp]
                if records and not buffer:
                    self._oldest[tp] = now
                for r in records:
                    buffer.append(r.offset, r.timestamp, r.key, r.value)
            self._flush_due(now)
            self._update_lag(consumer)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stop.wait()

    async def _discover(self, consumer: Consumer) -> None:
        """Assign every partition of the configured topics and position the new ones."""
        wanted: list[TopicPartition] = []
        for topic in self.config.topics:
            partitions = await partitions_of(consumer, topic)
            if not partitions:
                _log.warning("topic %s does not exist (yet); retrying in %.0f s", topic, _DISCOVER_EVERY_S)
                continue
            wanted.extend(TopicPartition(topic, p) for p in sorted(partitions))
        new = [tp for tp in wanted if tp not in self._buffers]
        if not new:
            return
        consumer.assign(list(self._buffers) + new)
        resume = self.layout.resume_offsets({tp.topic for tp in new})
        ends = await consumer.end_offsets(new)
        starts = await consumer.beginning_offsets(new)
        for tp in new:
            self._buffers[tp] = PartitionBuffer(tp.topic, tp.partition)
            position = resume.get((tp.topic, tp.partition))
            if position is None:
                position = starts[tp] if self.config.start == "earliest" else ends[tp]
            elif position < starts[tp]:
                _log.error(
                    "%s[%d]: offsets %d..%d were deleted by retention before they were archived",
                    tp.topic, tp.partition, position, starts[tp] - 1,
                )  # fmt: skip
            consumer.seek(tp, position)
            self._next[tp] = position
            self.metrics.next_offset.labels(tp.topic, str(tp.partition)).set(position)
            self.metrics.lag.labels(tp.topic, str(tp.partition)).set(max(0, ends[tp] - position))
            _log.info("archiving %s[%d] from offset %d", tp.topic, tp.partition, position)

    def _flush_due(self, now: float) -> None:
        cfg = self.config
        for tp, buffer in self._buffers.items():
            if buffer and (
                len(buffer) >= cfg.flush_records
                or buffer.size_bytes >= cfg.flush_bytes
                or (now - self._oldest[tp]) * 1000 >= cfg.flush_interval_ms
            ):
                self._flush(tp, buffer)

    def _flush_all(self) -> None:
        for tp, buffer in self._buffers.items():
            if buffer:
                self._flush(tp, buffer)

    def _flush(self, tp: TopicPartition, buffer: PartitionBuffer) -> None:
        count, size, last = len(buffer), buffer.size_bytes, buffer.offsets[-1]
        started = time.monotonic()
        files = self.writer.flush(buffer)
        self.metrics.flush_seconds.observe(time.monotonic() - started)
        self.files_written.extend(files)
        self._next[tp] = last + 1
        self.metrics.records.labels(tp.topic).inc(count)
        self.metrics.files.labels(tp.topic).inc(len(files))
        self.metrics.bytes.labels(tp.topic).inc(size)
        self.metrics.next_offset.labels(tp.topic, str(tp.partition)).set(last + 1)
        _log.debug("%s[%d]: archived %d records up to offset %d", tp.topic, tp.partition, count, last)

    def _update_lag(self, consumer: Consumer) -> None:
        for tp, next_offset in self._next.items():
            high = consumer.highwater(tp)
            if high is not None:
                self.metrics.lag.labels(tp.topic, str(tp.partition)).set(max(0, high - next_offset))

    @property
    def next_offsets(self) -> dict[tuple[str, int], int]:
        """Return the next offset to archive per (topic, partition)."""
        return {(tp.topic, tp.partition): offset for tp, offset in self._next.items()}


def topics_from(values: Sequence[str]) -> tuple[str, ...]:
    """Return the topics named by `--topic` values (each may be a comma-separated list)."""
    return tuple(t.strip() for value in values for t in value.split(",") if t.strip())
