"""Where archived records live: the directory layout, the file names, and the Parquet schema.

An archive is a directory tree (a local path or any URL pyarrow can open, e.g. `s3://bucket/prefix`):

    {root}/topic={topic}/hour={YYYY-MM-DDTHH}/p{partition:05d}-{first:020d}-{last:020d}.parquet

The hour is the UTC hour of the Kafka timestamp; `first` and `last` are the offsets of the first and
last record in the file, so a file *names* the offset range it holds. Every file is complete when it
becomes visible (temporary file + rename locally, a single PUT on object stores), and the files of one
partition are written in offset order; the resume position of a partition is therefore one past the
largest `last` found, which is what makes the archive exactly-once without any other bookkeeping.
Names starting with `.` or `_` are temporary or metadata files: readers (Spark included) skip them.

>>> name = ArchiveFile("net.a", 3, "2024-05-01T13", 100, 199).relative_path
>>> name
'topic=net.a/hour=2024-05-01T13/p00003-00000000000000000100-00000000000000000199.parquet'
>>> ArchiveFile.parse(name)
ArchiveFile(topic='net.a', partition=3, hour='2024-05-01T13', first=100, last=199)
>>> hour_of(1714571000000)
'2024-05-01T13'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

__all__ = [
    "ARCHIVE_SCHEMA",
    "ArchiveFile",
    "ArchiveLayout",
    "hour_of",
    "hour_start_ms",
]

ARCHIVE_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=True),  # Kafka timestamp, ms since the epoch
        pa.field("key", pa.binary(), nullable=True),
        pa.field("value", pa.binary(), nullable=True),  # the record as it arrived (UTF-8 JSON, normally)
    ]
)
"""The columns of every archive file."""

_HOUR_FORMAT = "%Y-%m-%dT%H"
_FILE = re.compile(r"p(?P<partition>\d{5})-(?P<first>\d{20})-(?P<last>\d{20})\.parquet")
_PATH = re.compile(r"topic=(?P<topic>[a-zA-Z0-9._-]+)/hour=(?P<hour>\d{4}-\d{2}-\d{2}T\d{2})/(?P<file>[^/]+)")


def hour_of(kafka_ts_ms: int | None) -> str:
    """Return the UTC hour directory of a Kafka timestamp (a missing timestamp goes to the epoch)."""
    ts = kafka_ts_ms if kafka_ts_ms is not None and kafka_ts_ms >= 0 else 0
    return datetime.fromtimestamp(ts // 1000, tz=UTC).strftime(_HOUR_FORMAT)


def hour_start_ms(hour: str) -> int:
    """Return the first millisecond of an hour directory name."""
    return int(datetime.strptime(hour, _HOUR_FORMAT).replace(tzinfo=UTC).timestamp()) * 1000


@dataclass(frozen=True, slots=True, order=True)
class ArchiveFile:
    """One archive file: the records of one topic partition, one hour, offsets `first..last`."""

    topic: str
    partition: int
    hour: str
    first: int
    last: int

    @property
    def relative_path(self) -> str:
        """Return the path of the file below the archive root."""
        return (
            f"topic={self.topic}/hour={self.hour}/"
            f"p{self.partition:05d}-{self.first:020d}-{self.last:020d}.parquet"
        )

    @classmethod
    def parse(cls, relative_path: str) -> ArchiveFile | None:
        """Return the file a relative path names, or None for anything else (temporary files too)."""
        match = _PATH.fullmatch(relative_path)
        if match is None:
            return None
        name = _FILE.fullmatch(match["file"])
        if name is None:
            return None
        return cls(
            match["topic"], int(name["partition"]), match["hour"], int(name["first"]), int(name["last"])
        )


class ArchiveLayout:
    """Open an archive by URL and list, name and locate its files."""

    def __init__(self, url: str) -> None:
        """Open the archive at `url`: a local path (created if missing) or a filesystem URI.

        Args:
            url: `./archive`, `/data/archive`, `file:///data/archive`, `s3://bucket/prefix?region=...`.
        """
        self.url = url
        if "://" in url:
            self.fs, root = pafs.FileSystem.from_uri(url)
        else:
            self.fs, root = pafs.LocalFileSystem(), _absolute(url)
        self.root = root.rstrip("/")
        self.is_local = isinstance(self.fs, pafs.LocalFileSystem)
        if self.is_local:
            self.fs.create_dir(self.root, recursive=True)

    def path(self, file: ArchiveFile) -> str:
        """Return the full path of `file` on the archive's filesystem."""
        return f"{self.root}/{file.relative_path}"

    def uri(self, file: ArchiveFile) -> str:
        """Return a URI of `file` that Spark can read (`file:///...` locally, `s3a://...` on S3)."""
        path = self.path(file)
        if self.is_local:
            return f"file://{path}"
        scheme = self.fs.type_name
        return f"s3a://{path}" if scheme == "s3" else f"{scheme}://{path}"

    def topic_dir(self, topic: str) -> str:
        """Return the directory of one topic."""
        return f"{self.root}/topic={topic}"

    def files(self, topics: Iterable[str]) -> Iterator[ArchiveFile]:
        """Yield every complete archive file of `topics` (in no particular order)."""
        for topic in topics:
            selector = pafs.FileSelector(self.topic_dir(topic), allow_not_found=True, recursive=True)
            prefix = len(self.root) + 1
            for info in self.fs.get_file_info(selector):
                if info.type != pafs.FileType.File:
                    continue
                parsed = ArchiveFile.parse(info.path[prefix:])
                if parsed is not None and parsed.topic == topic:
                    yield parsed

    def temporary_files(self, topics: Iterable[str]) -> list[str]:
        """Return the leftover temporary files (names starting with `.`) below `topics`."""
        leftovers: list[str] = []
        for topic in topics:
            selector = pafs.FileSelector(self.topic_dir(topic), allow_not_found=True, recursive=True)
            for info in self.fs.get_file_info(selector):
                if info.type == pafs.FileType.File and info.base_name.startswith("."):
                    leftovers.append(info.path)
        return leftovers

    def resume_offsets(self, topics: Iterable[str]) -> dict[tuple[str, int], int]:
        """Return, per (topic, partition) archived so far, the next offset to archive."""
        positions: dict[tuple[str, int], int] = {}
        for f in self.files(topics):
            key = (f.topic, f.partition)
            positions[key] = max(positions.get(key, 0), f.last + 1)
        return positions


def _absolute(path: str) -> str:
    return str(Path(path).expanduser().resolve())
