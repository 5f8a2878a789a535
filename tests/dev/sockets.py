"""Which addresses a process listens on, read from Linux `/proc` (test helper)."""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path

__all__ = ["listening_addresses"]

_LISTEN = "0A"


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _address(hex_address: str, family: int) -> tuple[str, int]:
    host_hex, port_hex = hex_address.split(":")
    raw = bytes.fromhex(host_hex)
    if family == socket.AF_INET:
        host = socket.inet_ntop(family, raw[::-1])
    else:  # four little-endian 32-bit words
        host = socket.inet_ntop(family, b"".join(struct.pack(">I", w) for w in struct.unpack("<4I", raw)))
    return host, int(port_hex, 16)


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """Return the (host, port) of every TCP socket process `pid` listens on."""
    inodes = _socket_inodes(pid)
    found = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == _LISTEN and fields[9] in inodes:
                found.append(_address(fields[1], family))
    return found
