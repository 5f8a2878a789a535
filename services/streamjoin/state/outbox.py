"""Output records as an operator's outbox holds them: one blob per committed batch.

An operator commits each batch's output records (results, or dead letters) with the batch, as ONE
MessagePack blob (`pack_records`): a Redis list element per record cost Redis about 1.7 µs per
result (the script unpacking and pushing thousands of strings), more than the join itself on a
result-heavy query. Outboxes written before blobs hold one record per element in the older packed
form (`encode_record`); `unpack_records` reads both, so an upgrade with records still pending
loses none.

A batch's results (no headers) are held and packed as two columns, keys and values
(`ResultRecords`): no tuple per result is built to commit and publish them, and the blob packs
two arrays of strings instead of an array of [key, value, headers] per result.

>>> r = OutboxRecord(b'"k1"', b'{"query":"q"}', (("id", b"abc"),))
>>> unpack_records(pack_records([r, OutboxRecord(None, b"v")])) == [r, OutboxRecord(None, b"v")]
True
>>> unpack_records(encode_record(r)) == [r]
True
>>> columns = ResultRecords([b"k", None], [b"a", b"b"])
>>> unpack_records(pack_records(columns)) == list(columns) == records_of([b"k", None], [b"a", b"b"])
True
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import repeat
from operator import itemgetter
from typing import NamedTuple, cast, overload

import msgpack

__all__ = [
    "OutboxRecord",
    "ResultRecords",
    "encode_record",
    "key_value_columns",
    "largest_value",
    "pack_records",
    "records_of",
    "unpack_records",
]

_COUNT = struct.Struct(">H")
_LEN = struct.Struct(">I")
_NONE = 0xFFFFFFFF
_COLUMNS = 1
"""The first element of a columns blob, `[1, keys, values]`: its second byte, 0x01, tells it from an
array of records (whose second byte is a record's array header, 0x93)."""
_COLUMNS_START = b"\x93\x01"


class OutboxRecord(NamedTuple):
    """One Kafka record to publish (its partition and `sj-seq` header are added when published)."""

    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


_new_record = cast(
    Callable[[tuple[bytes | None, bytes, tuple[()]]], OutboxRecord], partial(tuple.__new__, OutboxRecord)
)
"""`OutboxRecord` from one (key, value, headers) tuple at C level: the class's own `__new__` is a
Python function, 0.1 µs a record more (2.9 million results: 0.3 s)."""
_key_of = itemgetter(0)
_value_of = itemgetter(1)


def records_of(keys: Iterable[bytes | None], values: Iterable[bytes]) -> list[OutboxRecord]:
    """Return records without headers (results) of `keys` and `values`, taken pairwise.

    >>> records_of([None, b"k"], [b"a", b"b"])
    [OutboxRecord(key=None, value=b'a', headers=()), OutboxRecord(key=b'k', value=b'b', headers=())]
    """
    return list(map(_new_record, zip(keys, values, repeat(()))))


class ResultRecords(Sequence[OutboxRecord]):
    """Records without headers (a batch's results) as a column of keys and one of values.

    A sequence of `OutboxRecord`s to whoever reads it record by record (each built on access); the
    commit and the publisher read the columns instead (`key_value_columns`).
    """

    __slots__ = ("_largest", "keys", "values")

    def __init__(self, keys: list[bytes | None], values: list[bytes]) -> None:
        if len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys for {len(values)} values")
        self.keys = keys
        self.values = values
        self._largest: int | None = None

    def largest_value(self) -> int:
        """Return the length of the longest value (measured once: the builder and the publisher
        both check it)."""
        if self._largest is None:
            self._largest = max(map(len, self.values))
        return self._largest

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> OutboxRecord: ...

    @overload
    def __getitem__(self, index: slice) -> ResultRecords: ...

    def __getitem__(self, index: int | slice) -> OutboxRecord | ResultRecords:
        if isinstance(index, slice):
            return ResultRecords(self.keys[index], self.values[index])
        return OutboxRecord(self.keys[index], self.values[index])

    def __iter__(self) -> Iterator[OutboxRecord]:
        return map(_new_record, zip(self.keys, self.values, repeat(())))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # a mutable sequence's equality, as a list's

    def __repr__(self) -> str:
        return f"ResultRecords({list(self)!r})"


def key_value_columns(records: Sequence[OutboxRecord]) -> tuple[Sequence[bytes | None], Sequence[bytes]]:
    """Return the keys and the values of `records` (their own columns when they are `ResultRecords`)."""
    if isinstance(records, ResultRecords):
        return records.keys, records.values
    return list(map(_key_of, records)), list(map(_value_of, records))


def largest_value(records: Sequence[OutboxRecord]) -> int:
    """Return the length of the longest value of `records` (not empty)."""
    if isinstance(records, ResultRecords):
        return records.largest_value()
    return max(map(len, map(_value_of, records)))


def pack_records(records: Sequence[OutboxRecord]) -> bytes:
    """Return `records` as one blob (C-level, no Python bytecode per record): `ResultRecords` as
    `[1, keys, values]`, others as a MessagePack array of [key, value, headers]. Never empty, so
    never mistaken for the older form (its first byte is a header count's high byte, 0x00; an
    array's is 0x90 or more)."""
    blob: bytes  # (no `bytes()` around `packb`: a copy)
    if isinstance(records, ResultRecords):
        blob = msgpack.packb((_COLUMNS, records.keys, records.values), use_bin_type=True)
    else:
        blob = msgpack.packb(records, use_bin_type=True)
    return blob


def unpack_records(blob: bytes) -> list[OutboxRecord]:
    """Return the records of one outbox element: a blob, or one record in the older form."""
    if blob[:1] == b"\x00":
        return [_decode_record(blob)]
    if blob[:2] == _COLUMNS_START:
        _, keys, values = msgpack.unpackb(blob, raw=False)
        return records_of(keys, values)
    return [
        OutboxRecord(key, value, tuple(map(tuple, headers)) if headers else ())
        for key, value, headers in msgpack.unpackb(blob, raw=False)
    ]


def encode_record(record: OutboxRecord) -> bytes:
    """Return the older one-record form: header count, (name, value) pairs, key, value. Only
    outboxes written before blobs hold it (and the tests that make one)."""
    key, value, headers = record
    parts = [_COUNT.pack(len(headers))]
    for name, header in headers:
        raw = name.encode()
        parts += (_LEN.pack(len(raw)), raw, _LEN.pack(len(header)), header)
    parts += (_LEN.pack(_NONE),) if key is None else (_LEN.pack(len(key)), key)
    parts.append(value)
    return b"".join(parts)


def _decode_record(packed: bytes) -> OutboxRecord:
    """Return the record `encode_record` packed."""
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
