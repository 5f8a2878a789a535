"""Readiness: which dependencies are failing right now, served as `GET /readyz` on a small HTTP port.

>>> h = Health()
>>> h.ready
True
>>> h.fail("redis", "connection refused"); h.ready, h.problems()
(False, {'redis': 'connection refused'})
>>> h.ok("redis"); h.ready
True
"""

from __future__ import annotations

import asyncio
import json
import logging

__all__ = ["Health", "serve_readiness"]

_log = logging.getLogger(__name__)


class Health:
    """The worker's readiness: ready unless some component reported a failure it has not cleared."""

    def __init__(self) -> None:
        self._problems: dict[str, str] = {}
        self.started = False

    @property
    def ready(self) -> bool:
        """Return True when nothing is failing."""
        return not self._problems

    def fail(self, component: str, reason: str) -> None:
        """Record that `component` fails (logged once per change)."""
        if self._problems.get(component) != reason:
            _log.warning("not ready: %s: %s", component, reason)
        self._problems[component] = reason

    def ok(self, component: str) -> None:
        """Clear `component`'s failure."""
        if self._problems.pop(component, None) is not None:
            _log.info("%s recovered", component)

    def set(self, component: str, problem: str | None) -> None:
        """Record `component`'s `problem`, or clear it when None."""
        if problem is None:
            self.ok(component)
        else:
            self.fail(component, problem)

    def problems(self) -> dict[str, str]:
        """Return the failing components and why."""
        return dict(self._problems)


async def serve_readiness(health: Health, host: str, port: int) -> asyncio.Server:
    """Serve `GET /readyz` (200 when ready, 503 otherwise, JSON body) and `GET /livez` (always 200)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(5):
                request = await reader.readline()
            async with asyncio.timeout(5):
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
            path = request.split(b" ")[1] if request.count(b" ") >= 2 else b"/"
            if path.startswith(b"/livez"):
                body: dict[str, object] = {"live": True}
                status = "200 OK"
            else:
                ready = health.ready and health.started
                status = "200 OK" if ready else "503 Service Unavailable"
                body = {"ready": ready, "problems": health.problems(), "started": health.started}
            payload = json.dumps(body).encode()
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)
