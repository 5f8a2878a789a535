"""A minimal Redis (RESP2) client for readiness probes and smoke checks of the embedded Redis.

The product's Redis access belongs to the state store, the only package that imports `redis`
(style.md, rule 3); the dev stack only needs PING and a SET/GET round trip, which this speaks over
a plain socket.
"""

from __future__ import annotations

import socket
import ssl
from types import TracebackType
from typing import BinaryIO, TypeAlias

__all__ = ["RespConnection", "RespError", "RespValue"]

RespValue: TypeAlias = bytes | int | list["RespValue"] | None


class RespError(RuntimeError):
    """Redis answered with an error reply."""


class RespConnection:
    """One connection to a Redis server; use as a context manager."""

    def __init__(
        self, host: str, port: int, *, timeout_ms: int = 1_000, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        """Connect to `host:port`, with `timeout_ms` for connecting and for each reply (over TLS with
        `ssl_context`)."""
        sock = socket.create_connection((host, port), timeout=timeout_ms / 1000)
        if ssl_context is not None:
            try:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        self._sock = sock
        self._reader: BinaryIO = self._sock.makefile("rb")

    def call(self, *args: str | bytes | int) -> RespValue:
        """Send one command and return its reply; raise `RespError` on an error reply."""
        parts = [arg if isinstance(arg, bytes) else str(arg).encode() for arg in args]
        payload = b"".join([b"*%d\r\n" % len(parts), *(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)])
        self._sock.sendall(payload)
        return self._read()

    def close(self) -> None:
        """Close the connection."""
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> RespConnection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _read(self) -> RespValue:
        line = self._reader.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed by Redis")
        kind, body = line[:1], line[1:-2]
        if kind == b"+":
            return body
        if kind == b"-":
            raise RespError(body.decode(errors="replace"))
        if kind == b":":
            return int(body)
        if kind == b"$":
            size = int(body)
            if size < 0:
                return None
            data = self._reader.read(size + 2)
            return data[:-2]
        if kind == b"*":
            count = int(body)
            return None if count < 0 else [self._read() for _ in range(count)]
        raise ConnectionError(f"unexpected reply from Redis: {line!r}")
