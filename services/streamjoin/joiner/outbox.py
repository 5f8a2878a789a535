"""Output records as they wait in an outbox: key, value and headers, packed into one byte string.

An operator encodes each result (and each dead letter) once, commits the bytes to its outbox with
the batch, and publishes the same bytes after the commit, adding the sequence headers that let a
restarted owner find what was already published (`sj-query`, `sj-partition`, `sj-seq`).

>>> r = OutboxRecord(b'"k1"', b'{"query":"q"}', (("id", b"abc"),))
>>> decode_record(encode_record(r)) == r
True
>>> decode_record(encode_record(OutboxRecord(None, b"v"))).key is None
True
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = [
    "HEADER_PARTITION",
    "HEADER_QUERY",
    "HEADER_SEQ",
    "OutboxRecord",
    "decode_record",
    "encode_record",
    "sequence_headers",
]

HEADER_QUERY = "sj-query"
HEADER_PARTITION = "sj-partition"
HEADER_SEQ = "sj-seq"

_COUNT = struct.Struct(">H")
_LEN = struct.Struct(">I")
_NONE = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class OutboxRecord:
    """One Kafka record to publish (its partition and sequence headers are added when published)."""

    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


def encode_record(record: OutboxRecord) -> bytes:
    """Return the packed form: header count, (name, value) pairs, key, value."""
    parts = [_COUNT.pack(len(record.headers))]
    for name, value in record.headers:
        raw = name.encode()
        parts += (_LEN.pack(len(raw)), raw, _LEN.pack(len(value)), value)
    if record.key is None:
        parts.append(_LEN.pack(_NONE))
    else:
        parts += (_LEN.pack(len(record.key)), record.key)
    parts.append(record.value)
    return b"".join(parts)


def decode_record(packed: bytes) -> OutboxRecord:
    """Return the record packed by `encode_record`."""
    (count,) = _COUNT.unpack_from(packed, 0)
    pos = _COUNT.size
    headers = []
    for _ in range(count):
        (n,) = _LEN.unpack_from(packed, pos)
        name = packed[pos + 4 : pos + 4 + n].decode()
        pos += 4 + n
        (n,) = _LEN.unpack_from(packed, pos)
        headers.append((name, packed[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    (n,) = _LEN.unpack_from(packed, pos)
    pos += 4
    key = None
    if n != _NONE:
        key = packed[pos : pos + n]
        pos += n
    return OutboxRecord(key, packed[pos:], tuple(headers))


def sequence_headers(query: str, partition: int, seq: int) -> list[tuple[str, bytes]]:
    """Return the headers that identify output record `seq` of (query, partition)."""
    return [
        (HEADER_QUERY, query.encode()),
        (HEADER_PARTITION, str(partition).encode()),
        (HEADER_SEQ, str(seq).encode()),
    ]
