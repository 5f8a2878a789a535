"""The archiver: input topics into a Parquet archive, exactly once (`service`), and its file layout.

Only the layout and writer are imported here (pyarrow); the service (aiokafka) is imported by the
`streamjoin archiver` command, so readers of the archive such as the back-fill do not need a consumer.
"""

from streamjoin.archiver.layout import ARCHIVE_SCHEMA, ArchiveFile, ArchiveLayout, hour_of, hour_start_ms
from streamjoin.archiver.writer import ArchiveWriter, PartitionBuffer

__all__ = [
    "ARCHIVE_SCHEMA",
    "ArchiveFile",
    "ArchiveLayout",
    "ArchiveWriter",
    "PartitionBuffer",
    "hour_of",
    "hour_start_ms",
]
