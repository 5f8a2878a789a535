"""A long-lived task of the worker that runs attempts until one ends cleanly.

The operator (a query partition) and the repartitioner (a source partition) have the same life: an
attempt claims its state, runs until stopped, and a failure starts a new attempt from the stored
state after a backoff that doubles up to a bound; a fence (another worker owns the work now) ends
the task; stopping waits for the attempt to finish, bounded, and then cancels it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.state.base import FencedError

__all__ = ["Attempts", "stop_bounded"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Attempts:
    """How one task retries: its name in logs, the failures it expects (logged without a trace),
    what a failure reports, and what a new attempt starts from."""

    name: str
    expected: tuple[type[Exception], ...]
    on_failure: Callable[[Exception], None]
    on_success: Callable[[], None]
    restarts_from: str

    async def run(
        self, attempt: Callable[[], Awaitable[None]], stopping: asyncio.Event, config: OperatorConfig
    ) -> None:
        """Run `attempt` until it returns, a fence ends it, or `stopping` is set."""
        backoff = config.backoff_initial_ms
        while not stopping.is_set():
            try:
                await attempt()
                self.on_success()
                return
            except FencedError as exc:
                _log.warning("%s: another worker owns it now (%s); stopping", self.name, exc)
                return
            except self.expected as exc:
                _log.warning("%s: %s: %s; retrying in %d ms", self.name, type(exc).__name__, exc, backoff)
                self.on_failure(exc)
            except Exception as exc:
                _log.exception("%s failed; restarting it from its %s", self.name, self.restarts_from)
                self.on_failure(exc)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(backoff / 1000):
                    await stopping.wait()
            backoff = min(backoff * 2, config.backoff_max_ms)


async def stop_bounded(name: str, task: asyncio.Task[None] | None, timeout_ms: int) -> None:
    """Wait up to `timeout_ms` for `task` to end (its stop was asked for), then cancel it."""
    if task is None:
        return
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            await asyncio.shield(task)
    except TimeoutError:
        _log.warning("%s did not stop in time; cancelling it", name)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    except Exception:  # the task's own failure was logged by it
        pass
