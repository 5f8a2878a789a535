"""Free TCP ports on the loopback interface.

A port found free can be taken by someone else before our server binds it; callers that start a
server on it retry with a new port when the server exits early (see `EmbeddedBroker.start`).
"""

from __future__ import annotations

import socket
import time

__all__ = ["LOOPBACK", "free_port", "port_accepts"]

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def port_accepts(port: int, *, host: str = LOOPBACK, timeout_ms: int = 200) -> bool:
    """Return whether a TCP connection to `host:port` is accepted within `timeout_ms`."""
    deadline = time.monotonic() + timeout_ms / 1000
    try:
        with socket.create_connection((host, port), timeout=max(deadline - time.monotonic(), 0.001)):
            return True
    except OSError:
        return False
