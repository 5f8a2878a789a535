"""The Confluent wire format: magic byte 0, the schema id (4 bytes, big-endian), the Avro body."""

from __future__ import annotations

__all__ = ["HEADER_BYTES", "WireFormatError", "frame", "unframe"]

HEADER_BYTES = 5
_MAGIC = 0


class WireFormatError(ValueError):
    """Bytes that are not a framed record (no magic byte 0, or shorter than the header)."""


def frame(schema_id: int, body: bytes) -> bytes:
    """Return `body` (Avro binary) framed with `schema_id`.

    >>> frame(7, b"\\x02")
    b'\\x00\\x00\\x00\\x00\\x07\\x02'
    """
    if not 0 <= schema_id < 1 << 32:
        raise ValueError(f"schema id {schema_id} does not fit in 4 bytes")
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def unframe(raw: bytes) -> tuple[int, memoryview]:
    """Return the schema id and the body of a framed record.

    >>> schema_id, body = unframe(b"\\x00\\x00\\x00\\x00\\x07\\x02")
    >>> schema_id, bytes(body)
    (7, b'\\x02')

    Raises:
        WireFormatError: `raw` is not framed.
    """
    if len(raw) < HEADER_BYTES:
        raise WireFormatError(f"{len(raw)} bytes: shorter than the 5-byte schema registry header")
    if raw[0] != _MAGIC:
        raise WireFormatError(f"magic byte {raw[0]}, not 0: not in the schema registry wire format")
    return int.from_bytes(raw[1:HEADER_BYTES], "big"), memoryview(raw)[HEADER_BYTES:]
