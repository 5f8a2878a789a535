"""The worker's background loops: retry a start-up step until it works, run a job periodically, and
cancel them at shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

from streamjoin.joiner.health import Health
from streamjoin.state.base import StateUnavailableError

__all__ = ["cancel_and_wait", "every", "retry_until_stopped"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")


async def retry_until_stopped(
    health: Health, stop: asyncio.Event, component: str, call: Callable[[], Awaitable[_T]]
) -> _T | None:
    """Await `call()` until it succeeds (backing off up to 5 s) or `stop` is set (then None)."""
    backoff = 0.1
    while not stop.is_set():
        try:
            result = await call()
            health.ok(component)
            return result
        except Exception as exc:
            health.fail(component, f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(backoff):
                    await stop.wait()
            backoff = min(backoff * 2, 5.0)
    return None


async def every(health: Health, interval_ms: int, job: Callable[[], Awaitable[None]]) -> None:
    """Run `job` every `interval_ms` forever; its failures mark it unhealthy (or are logged)."""
    name = getattr(job, "__name__", repr(job))
    while True:
        try:
            await job()
            health.ok(name)
        except (StateUnavailableError, ConnectionError, OSError, TimeoutError) as exc:
            health.fail(name, f"{type(exc).__name__}: {exc}")
        except Exception:
            _log.exception("%s failed", name)
        await asyncio.sleep(interval_ms / 1000)


async def cancel_and_wait(tasks: Collection[asyncio.Task[Any]], timeout_s: float) -> list[str]:
    """Cancel `tasks` and wait up to `timeout_s` for them to end; return the names of those still
    running (logged: a shutdown goes on without them, so that the operators still stop)."""
    for task in tasks:
        task.cancel()
    if not tasks:
        return []
    _, running = await asyncio.wait(tasks, timeout=timeout_s)
    stuck = sorted(task.get_name() for task in running)
    if stuck:
        _log.warning("tasks still running %.0f s after they were cancelled: %s", timeout_s, ", ".join(stuck))
    return stuck
