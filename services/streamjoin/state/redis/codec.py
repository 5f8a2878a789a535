"""How an engine entry is stored in Redis: a small header and the raw record bytes.

The header keeps the timestamp as JSON so an integer stays an integer (output records repeat it).

>>> from streamjoin.engine.entry import Entry
>>> e = Entry(1, 3, 42, 205, {"k": 1}, size=8)
>>> e.seq = 7
>>> packed = pack_entry(e, b'{"k": 1}')
>>> field_of(e), packed
(b'1:42', b'205|8|1|7|{"k": 1}')
>>> back = unpack_entry("1:42", 3, packed)
>>> (back.input, back.partition, back.offset, back.ts, back.record, back.seq, back.size)
(1, 3, 42, 205, {'k': 1}, 7, 8)
"""

from __future__ import annotations

import json

from streamjoin.engine.entry import Entry

__all__ = ["field_of", "pack_entry", "raw_of", "unpack_entry"]


def field_of(entry: Entry) -> bytes:
    """Return the hash field of an entry: `input:offset` (the partition is the key's)."""
    return b"%d:%d" % (entry.input, entry.offset)


def pack_entry(entry: Entry, raw: bytes) -> bytes:
    """Return the stored form of `entry` whose record arrived as `raw`."""
    ts = entry.ts
    if type(ts) is int:
        return b"%d|%d|%d|%d|%s" % (ts, entry.size, entry.passes, entry.seq, raw)
    return b"%s|%d|%d|%d|%s" % (json.dumps(ts).encode(), entry.size, entry.passes, entry.seq, raw)


def unpack_entry(field: str | bytes, partition: int, packed: bytes, seq: int | None = None) -> Entry:
    """Rebuild an entry from its field, its partition and its stored form (`seq` overrides)."""
    if isinstance(field, bytes):
        field = field.decode()
    input_text, _, offset_text = field.partition(":")
    ts_text, size_text, passes_text, seq_text, raw = packed.split(b"|", 4)
    entry = Entry(
        int(input_text),
        partition,
        int(offset_text),
        json.loads(ts_text),
        json.loads(raw),
        int(size_text),
    )
    entry.passes = passes_text == b"1"
    entry.seq = int(seq_text) if seq is None else seq
    return entry


def raw_of(packed: bytes) -> bytes:
    """Return the raw record bytes of a stored entry."""
    return packed.split(b"|", 4)[4]
