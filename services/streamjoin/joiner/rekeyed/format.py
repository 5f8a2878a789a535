"""What a repartitioner writes to an internal topic, and how an operator reads it back (docs/joiner.md,
"Re-keyed inputs").

A re-keyed record keeps its raw value; its headers say where it came from:
`sj-src` = `<source partition>:<source offset>` and `sj-gen` = the query incarnation that wrote it.
A progress marker has an empty value and `sj-wm` = `<source partition>:<max timestamp so far>`
instead of `sj-src`.

>>> from streamjoin.query.partitioning import partition_for
>>> route(load(b'{"x": 7, "ts": 1}'), "x", 4, 2) == (partition_for(7, 4), b"7")
True
>>> route({"x": 7.0}, "x", 4, 2) == route({"x": 7}, "x", 4, 2)
True
>>> route(load(b"not json"), "x", 4, 6), route({"y": 1}, "x", 4, 1), route({"x": 1}, None, 1, 3)
((2, None), (1, None), (0, None))
>>> load(b'{"big": 123456789012345678901234567890}')["big"] > 2**64
True
>>> parse_position(source_header(3, 1234)), parse_mark(mark_header(3, 17.5)), parse_mark(mark_header(0, 9))
((3, 1234), (3, 17.5), (0, 9))
>>> generation(1700000000.25, 3)
b'1700000000250.3'
"""

from __future__ import annotations

import math

import orjson

from streamjoin.query.partitioning import load_json as load
from streamjoin.query.partitioning import route, routing_value
from streamjoin.query.record_key import json_key

__all__ = [
    "HEADER_GEN",
    "HEADER_MARK",
    "HEADER_SOURCE",
    "generation",
    "load",
    "mark_header",
    "parse_mark",
    "parse_position",
    "route",
    "routing_value",
    "source_header",
]

HEADER_SOURCE = "sj-src"
HEADER_MARK = "sj-wm"
HEADER_GEN = "sj-gen"


def generation(created_at: float, revision: int) -> bytes:
    """Return the incarnation tag of a query: its registration time (ms) and revision.

    A redefined query (new revision) or one deleted and registered again under its name reads its
    internal topics from their start: records an earlier incarnation left there carry another tag
    and are skipped.
    """
    return b"%d.%d" % (round(created_at * 1000), revision)


def source_header(partition: int, offset: int) -> bytes:
    """Return the `sj-src` header of the record at `offset` of source `partition`."""
    return b"%d:%d" % (partition, offset)


def mark_header(partition: int, ts: float) -> bytes:
    """Return the `sj-wm` header of a marker: source `partition` has been re-keyed up to `ts`."""
    return b"%d:%s" % (partition, json_key(ts))


def parse_position(value: bytes) -> tuple[int, int]:
    """Return (source partition, source offset) of an `sj-src` header."""
    partition, _, offset = value.partition(b":")
    return int(partition), int(offset)


def parse_mark(value: bytes) -> tuple[int, float]:
    """Return (source partition, timestamp) of an `sj-wm` header."""
    partition, _, ts = value.partition(b":")
    parsed = orjson.loads(ts)
    if not isinstance(parsed, int | float) or isinstance(parsed, bool) or not math.isfinite(parsed):
        raise ValueError(f"bad progress marker {value!r}")
    return int(partition), parsed
