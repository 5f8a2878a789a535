"""`Hold`: a rebalance's hold on a task that runs batches (an operator, a repartitioner).

The group's eager protocol revokes every partition of every member before it assigns them again,
mostly to the same members. Stopping a task on the revoke and starting it on the assignment costs
its claim, its restore from Redis and its positioning (about 2 s an operator on Apache Kafka) for
every task the worker keeps. Instead the revoke holds it: it finishes its batch, waits until what
it published is acknowledged and records that, then waits with its state in memory. The assignment
releases the tasks whose partitions came back and stops the others. Nothing of a held task is in
flight when the group moves its partitions, as with a stopped one, so a new owner's claim and
recovery race with nothing; a task released after its partition went elsewhere and back is fenced
at its next commit, and starts again from Redis (docs/joiner.md, "Rebalances"). Kafka Streams
suspended its tasks on the eager protocol's revoke the same way, and resumed those reassigned to it.
"""

from __future__ import annotations

import asyncio
import contextlib

from streamjoin.joiner.operators.config import OperatorConfig

__all__ = ["Hold", "Holdable"]


class Hold:
    """Whether a task may run its next batch: held (between a revoke and the next assignment) or not.

    The task calls `wait` where nothing of it is in flight (before an attempt, between batches); the
    worker calls `hold`, then `settled` to know the task is waiting, and `release`.
    """

    def __init__(self) -> None:
        self._released = asyncio.Event()
        self._released.set()
        self._waiting = asyncio.Event()

    @property
    def held(self) -> bool:
        """Return True between `hold` and `release`."""
        return not self._released.is_set()

    def hold(self) -> None:
        """Ask the task to stop at its next `wait` (once what it did is settled)."""
        self._released.clear()

    def release(self) -> None:
        """Let the task go on."""
        self._released.set()

    async def wait(self, stopping: asyncio.Event) -> None:
        """Wait while held, until released or `stopping` (the task has nothing in flight)."""
        if not self.held:
            return
        self._waiting.set()
        try:
            released = asyncio.ensure_future(self._released.wait())
            stopped = asyncio.ensure_future(stopping.wait())
            try:
                await asyncio.wait([released, stopped], return_when=asyncio.FIRST_COMPLETED)
            finally:
                released.cancel()
                stopped.cancel()
        finally:
            self._waiting.clear()

    async def settled(self, task: asyncio.Task[None] | None, timeout_ms: int) -> bool:
        """Return True once the held task waits in `wait` or has ended; False after `timeout_ms`."""
        if task is None or task.done() or self._waiting.is_set():
            return True
        waiting = asyncio.ensure_future(self._waiting.wait())
        try:
            await asyncio.wait(
                [waiting, task], timeout=timeout_ms / 1000, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        return task.done() or self._waiting.is_set()


class Holdable:
    """A task a rebalance holds (an operator, a repartitioner): its `_hold`, the task it runs in,
    and its configuration (the stop timeout bounds how long settling may take)."""

    _hold: Hold
    _task: asyncio.Task[None] | None
    _config: OperatorConfig

    def hold(self) -> None:
        """Finish the current batch, let what it wrote be acknowledged and recorded, and wait for
        `release`."""
        self._hold.hold()

    async def settled(self) -> bool:
        """Return True once held with nothing in flight (or ended); False after the stop timeout."""
        return await self._hold.settled(self._task, self._config.stop_timeout_ms)

    def release(self) -> None:
        """Go on after `hold`, from the batch where it stopped."""
        self._hold.release()

    @property
    def held(self) -> bool:
        """Return True between `hold` and `release`."""
        return self._hold.held
