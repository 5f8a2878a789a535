"""How an engine entry is stored in Redis: a small header per query, the record bytes in the
topic's shared window table (`StateKeys.table`).

The header keeps the timestamp as JSON so an integer stays an integer (output records repeat it).

>>> from streamjoin.engine.entry import Entry
>>> e = Entry(1, 3, 42, 205, {"k": 1}, size=8)
>>> e.seq = 7
>>> field_of(e), pack_entry(e)
(b'1:42', b'205|8|1|7')
>>> back = unpack_entry("1:42", 3, b'205|8|1|7', b'{"k": 1}')
>>> (back.input, back.partition, back.offset, back.ts, back.record, back.seq, back.size)
(1, 3, 42, 205, {'k': 1}, 7, 8)
"""

from __future__ import annotations

import json

from streamjoin.engine.entry import Entry

__all__ = ["field_of", "pack_entry", "parse_field", "unpack_entry"]


def field_of(entry: Entry) -> bytes:
    """Return the hash field of an entry: `input:offset` (the partition is the key's)."""
    return b"%d:%d" % (entry.input, entry.offset)


def parse_field(field: str | bytes) -> tuple[int, int]:
    """Return (input, offset) of a hash field."""
    if isinstance(field, bytes):
        field = field.decode()
    input_text, _, offset_text = field.partition(":")
    return int(input_text), int(offset_text)


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
    input_index, offset = parse_field(field)
    ts_text, size_text, passes_text, seq_text = header.split(b"|", 3)
    entry = Entry(input_index, partition, offset, json.loads(ts_text), json.loads(raw), int(size_text))
    entry.passes = passes_text == b"1"
    entry.seq = int(seq_text) if seq is None else seq
    return entry
