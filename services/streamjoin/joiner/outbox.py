"""Output records as they wait in an outbox: key, value and headers, packed into one byte string.

An operator encodes each result (and each dead letter) once, commits the bytes to its outbox with
the batch, and publishes the same key and value after the commit with one more header, `sj-seq`,
whose value `query/partition/seq` lets a restarted owner find what was already published (on a
results partition the operator owns alone, only the last record of each publish has it). Results
carry no other header (their `id` is a field of the value, docs/queries.md, "The output record"): every header
costs the producer about 0.5 µs per record.

>>> r = OutboxRecord(b'"k1"', b'{"query":"q"}', (("id", b"abc"),))
>>> decode_record(encode_record(r)) == r
True
>>> decode_record(encode_record(OutboxRecord(None, b"v"))).key is None
True
>>> parse_sequence_header(sequence_header(sequence_prefix("q", 1), 42))
(b'q', 1, 42)
>>> parse_sequence_header(b"not ours") is None
True
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = [
    "HEADER_SEQ",
    "OutboxRecord",
    "decode_record",
    "encode_record",
    "parse_sequence_header",
    "sequence_header",
    "sequence_prefix",
]

HEADER_SEQ = "sj-seq"

_COUNT = struct.Struct(">H")
_LEN = struct.Struct(">I")
_NONE = 0xFFFFFFFF
_NO_HEADERS = _COUNT.pack(0)
_NO_KEY = _LEN.pack(_NONE)


class OutboxRecord(NamedTuple):
    """One Kafka record to publish (its partition and `sj-seq` header are added when published)."""

    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


def encode_record(record: OutboxRecord) -> bytes:
    """Return the packed form: header count, (name, value) pairs, key, value."""
    key, value, headers = record
    if not headers:  # results: one concatenation
        if key is None:
            return _NO_HEADERS + _NO_KEY + value
        return _NO_HEADERS + _LEN.pack(len(key)) + key + value
    parts = [_COUNT.pack(len(headers))]
    for name, header in headers:
        raw = name.encode()
        parts += (_LEN.pack(len(raw)), raw, _LEN.pack(len(header)), header)
    if key is None:
        parts.append(_NO_KEY)
    else:
        parts += (_LEN.pack(len(key)), key)
    parts.append(value)
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


def sequence_prefix(query: str, partition: int) -> bytes:
    """Return the start of the `sj-seq` values of (query, partition): `query/partition/`."""
    return b"%s/%d/" % (query.encode(), partition)


def sequence_header(prefix: bytes, seq: int) -> bytes:
    """Return the `sj-seq` value of output record `seq` (prefix from `sequence_prefix`)."""
    return b"%s%d" % (prefix, seq)


def parse_sequence_header(value: bytes) -> tuple[bytes, int, int] | None:
    """Return (query, partition, seq) of an `sj-seq` value (query names may contain `/`); None if
    it is not one (a record some other writer put on the topic)."""
    parts = value.rsplit(b"/", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1]), int(parts[2])
