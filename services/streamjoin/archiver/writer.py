"""Write buffered records of one topic partition to archive files, each complete or absent.

A flush splits the partition's buffer into runs of one hour each (in offset order) and writes one
file per run, named by its offset range (`layout.py`). A local file is written under a hidden
temporary name, fsynced, and renamed into place; on an object store the single PUT of the file is
the atomic step. Either way a reader, and the archiver after a crash, sees whole files or none.

>>> import tempfile
>>> layout = ArchiveLayout(tempfile.mkdtemp())
>>> buffer = PartitionBuffer("t", 0)
>>> buffer.append(5, 1714571000000, None, b'{"a": 1}')
>>> buffer.append(6, 1714572000000, b"k", b'{"a": 2}')
>>> [f.relative_path.split("/")[1] for f in ArchiveWriter(layout).flush(buffer)]
['hour=2024-05-01T13', 'hour=2024-05-01T14']
>>> len(buffer), sorted(layout.resume_offsets(["t"]).items())
(0, [(('t', 0), 7)])
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from streamjoin.archiver.layout import ARCHIVE_SCHEMA, ArchiveFile, ArchiveLayout, hour_of

__all__ = ["ArchiveWriter", "PartitionBuffer"]


@dataclass
class PartitionBuffer:
    """The records of one topic partition consumed but not yet archived, in offset order."""

    topic: str
    partition: int
    offsets: list[int] = field(default_factory=list)
    timestamps: list[int | None] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    size_bytes: int = 0

    def append(self, offset: int, timestamp: int | None, key: bytes | None, value: bytes | None) -> None:
        """Add one record (offsets must increase)."""
        self.offsets.append(offset)
        self.timestamps.append(timestamp)
        self.keys.append(key)
        self.values.append(value)
        self.size_bytes += (len(value) if value else 0) + (len(key) if key else 0) + 24

    def clear(self) -> None:
        """Forget every buffered record."""
        self.offsets.clear()
        self.timestamps.clear()
        self.keys.clear()
        self.values.clear()
        self.size_bytes = 0

    def __len__(self) -> int:
        return len(self.offsets)


class ArchiveWriter:
    """Turn partition buffers into archive files."""

    def __init__(self, layout: ArchiveLayout, *, compression: str = "zstd") -> None:
        """Write into `layout` with the given Parquet compression codec."""
        self.layout = layout
        self.compression = compression

    def flush(self, buffer: PartitionBuffer) -> list[ArchiveFile]:
        """Write the buffer's records as one file per hour run, in offset order; empty the buffer."""
        written: list[ArchiveFile] = []
        start = 0
        hours = [hour_of(ts) for ts in buffer.timestamps]
        for end in range(1, len(buffer) + 1):
            if end == len(buffer) or hours[end] != hours[start]:
                written.append(self._write_run(buffer, hours[start], start, end))
                start = end
        buffer.clear()
        return written

    def _write_run(self, buffer: PartitionBuffer, hour: str, start: int, end: int) -> ArchiveFile:
        n = end - start
        file = ArchiveFile(
            buffer.topic, buffer.partition, hour, buffer.offsets[start], buffer.offsets[end - 1]
        )
        table = pa.Table.from_arrays(
            [
                pa.array([buffer.topic] * n, pa.string()),
                pa.array([buffer.partition] * n, pa.int32()),
                pa.array(buffer.offsets[start:end], pa.int64()),
                pa.array(buffer.timestamps[start:end], pa.int64()),
                pa.array(buffer.keys[start:end], pa.binary()),
                pa.array(buffer.values[start:end], pa.binary()),
            ],
            schema=ARCHIVE_SCHEMA,
        )
        path = self.layout.path(file)
        if self.layout.is_local:
            self._write_local(table, path)
        else:  # one PUT (or a multipart upload completed at close): the object appears whole or not
            with self.layout.fs.open_output_stream(path) as out:
                pq.write_table(table, out, compression=self.compression)
        return file

    def _write_local(self, table: pa.Table, path: str) -> None:
        directory, name = os.path.split(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{name}.tmp-{uuid.uuid4().hex}")
        try:
            with open(tmp, "wb") as out:
                pq.write_table(table, out, compression=self.compression)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
