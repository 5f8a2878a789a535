"""The archive layout and writer: file names, hour runs, resume positions, atomic files (fast)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from streamjoin.archiver import ARCHIVE_SCHEMA, ArchiveFile, ArchiveLayout, ArchiveWriter, PartitionBuffer

HOUR = 3_600_000
T0 = 1_714_571_000_000  # 2024-05-01T13:43:20Z


def test_names_round_trip_and_ignore_everything_else() -> None:
    f = ArchiveFile("net.a-b_c", 12, "2024-05-01T13", 0, 10**12)
    assert ArchiveFile.parse(f.relative_path) == f
    tmp = f.relative_path.replace("/p00012", "/.p00012") + ".tmp-abc"
    assert ArchiveFile.parse(tmp) is None
    assert ArchiveFile.parse("topic=a/hour=2024-05-01T13/_SUCCESS") is None
    assert ArchiveFile.parse("topic=a/p00001-00000000000000000001-00000000000000000002.parquet") is None


def test_flush_splits_hour_runs_in_offset_order(tmp_path: Path) -> None:
    layout = ArchiveLayout(str(tmp_path))
    buffer = PartitionBuffer("t", 3)
    hours = [0, 0, 1, 0, 2, 2]  # a producer may set timestamps out of order: runs, not one file per hour
    for i, h in enumerate(hours):
        buffer.append(100 + i, T0 + h * HOUR, b"k" if i % 2 else None, f'{{"i": {i}}}'.encode())
    files = ArchiveWriter(layout).flush(buffer)
    assert [(f.first, f.last) for f in files] == [(100, 101), (102, 102), (103, 103), (104, 105)]
    assert [f.hour for f in files] == ["2024-05-01T13", "2024-05-01T14", "2024-05-01T13", "2024-05-01T15"]
    assert len(buffer) == 0 and buffer.size_bytes == 0
    assert sorted(layout.files(["t"])) == sorted(files)
    assert layout.resume_offsets(["t", "other"]) == {("t", 3): 106}
    assert layout.temporary_files(["t"]) == []
    table = pq.read_table(layout.path(files[3]))
    assert table.schema.equals(ARCHIVE_SCHEMA)
    assert table.column("offset").to_pylist() == [104, 105]
    assert table.column("value").to_pylist() == [b'{"i": 4}', b'{"i": 5}']
    assert table.column("key").to_pylist() == [None, b"k"]


def test_resume_ignores_leftover_temporary_files(tmp_path: Path) -> None:
    layout = ArchiveLayout(f"file://{tmp_path}")
    buffer = PartitionBuffer("t", 0)
    buffer.append(0, T0, None, b"{}")
    (done,) = ArchiveWriter(layout).flush(buffer)
    leftover = Path(layout.path(done)).with_name(
        ".p00000-00000000000000000001-00000000000000000009.parquet.tmp-x"
    )
    leftover.write_bytes(b"half a file")
    assert layout.resume_offsets(["t"]) == {("t", 0): 1}
    assert layout.temporary_files(["t"]) == [str(leftover)]
    assert layout.uri(done).startswith("file:///")
