"""How an engine entry is stored in Redis: a small header per query, the record bytes in the
topic's shared window table (`StateKeys.table`).

The header keeps the timestamp as JSON so an integer stays an integer (output records repeat it).

>>> from streamjoin.engine.entry import Entry
>>> e = Entry(1, 3, 42, 205, {"k": 1}, size=8)
>>> e.seq = 7
>>> field_of(e, 3), pack_entry(e)
(b'1:42', b'205|8|1|7')
>>> back = unpack_entry("1:42", 3, b'205|8|1|7', b'{"k": 1}')
>>> (back.input, back.partition, back.offset, back.ts, back.record, back.seq, back.size)
(1, 3, 42, 205, {'k': 1}, 7, 8)

An entry of another partition than the key's (a re-keyed input's record, read from an internal
topic, keeps its source partition and offset) names its partition: `input:partition.offset`.

>>> field_of(e, 0), record_id(e, 0), parse_field("1:3.42")
(b'1:3.42', b'3.42', (1, 3, 42))
>>> unpack_entry("1:3.42", 0, b'205|8|1|7', b'{"k": 1}').partition
3
"""

from __future__ import annotations

import json

from streamjoin.engine.entry import Entry

__all__ = ["field_of", "pack_entry", "parse_field", "raw_key", "record_id", "unpack_entry"]


def record_id(entry: Entry, partition: int) -> bytes:
    """Return how the record of `entry` is named in the tables of `partition`: its offset, or
    `source partition.offset` when it comes from another partition (a re-keyed input)."""
    if entry.partition == partition:
        return b"%d" % entry.offset
    return b"%d.%d" % (entry.partition, entry.offset)


def field_of(entry: Entry, partition: int) -> bytes:
    """Return the hash field of an entry stored under `partition`: `input:` + its `record_id`."""
    return b"%d:%s" % (entry.input, record_id(entry, partition))


def parse_field(field: str | bytes) -> tuple[int, int | None, int]:
    """Return (input, partition or None for the key's, offset) of a hash field."""
    if isinstance(field, bytes):
        field = field.decode()
    input_text, _, rest = field.partition(":")
    partition_text, dot, offset_text = rest.partition(".")
    if not dot:
        return int(input_text), None, int(partition_text)
    return int(input_text), int(partition_text), int(offset_text)


def raw_key(input_index: int, partition: int | None, offset: int) -> tuple[int, ...]:
    """Return the key of a record's bytes in `Checkpoint.raws`: (input, offset), or (input, offset,
    source partition) for a record of another partition."""
    return (input_index, offset) if partition is None else (input_index, offset, partition)


def pack_entry(entry: Entry) -> bytes:
    """Return the stored header of `entry`."""
    ts = entry.ts
    if type(ts) is int:
        return b"%d|%d|%d|%d" % (ts, entry.size, entry.passes, entry.seq)
    return b"%s|%d|%d|%d" % (json.dumps(ts).encode(), entry.size, entry.passes, entry.seq)


def unpack_entry(
    field: str | bytes, partition: int, header: bytes, raw: bytes, seq: int | None = None
) -> Entry:
    """Rebuild an entry from its field, partition, stored header and record bytes (`seq` overrides)."""
    input_index, source, offset = parse_field(field)
    ts_text, size_text, passes_text, seq_text = header.split(b"|", 3)
    part = partition if source is None else source
    entry = Entry(input_index, part, offset, json.loads(ts_text), json.loads(raw), int(size_text))
    entry.passes = passes_text == b"1"
    entry.seq = int(seq_text) if seq is None else seq
    return entry
