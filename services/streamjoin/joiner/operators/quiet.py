"""`QuietWait`: how long a task that runs batches (an operator, a repartitioner) waits for input.

A fetch returns as soon as a record arrives, however long it may wait; what a short wait buys is
how soon the loop looks at everything else (its stop, a rebalance's hold, a marker or an idle flag
that fell due). Every wait that finds nothing doubles the next one, from `poll_ms` up to
`quiet_ms`; a record brings it back to `poll_ms`. An idle worker with 30 re-keyed queries (180
such loops) spent 0.66 cores mostly waking each loop every 20 ms to find nothing (docs/joiner.md,
"What a query costs a worker"). A stop or a hold does not wait for a quiet wait to run out:
`interrupt` ends it at once, with nothing taken (the consumer keeps what it fetched meanwhile).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["QuietWait"]

T = TypeVar("T")


class QuietWait:
    """The wait of a task's next fetch: short while input flows, longer while it does not."""

    def __init__(self, poll_ms: int, quiet_ms: int) -> None:
        self._poll_ms = poll_ms
        self._quiet_ms = max(quiet_ms, poll_ms)
        self._next_ms = poll_ms
        self._waiting: asyncio.Future[Any] | None = None

    @property
    def timeout_ms(self) -> int:
        """Return how long the next fetch may wait for a record."""
        return self._next_ms

    def found(self, anything: bool) -> None:
        """Note what the last fetch brought: `anything` resets the wait, nothing doubles it."""
        self._next_ms = self._poll_ms if anything else min(self._next_ms * 2, self._quiet_ms)

    def interrupt(self) -> None:
        """End a quiet wait under way at once (a stop, a hold): its fetch returns nothing."""
        if self._waiting is not None and not self._waiting.done():
            self._waiting.cancel()

    async def fetch(self, fetch: Coroutine[Any, Any, T], nothing: T, timeout_ms: int) -> T:
        """Return what `fetch` (waiting up to `timeout_ms`) brings; `nothing` if interrupted first.

        A wait no longer than `poll_ms` runs inline (input flowing: no task per batch)."""
        if timeout_ms <= self._poll_ms:
            return await fetch
        task = asyncio.ensure_future(fetch)
        self._waiting = task
        try:
            await asyncio.wait([task])
        finally:
            self._waiting = None
            task.cancel()  # this task itself was cancelled (else the fetch is done): so is the fetch
        return nothing if task.cancelled() else task.result()
