"""The queries a worker laid out, and how new ones are laid out: in the background, a few at a time,
off the worker's lock (docs/joiner.md, "Laying queries out").

Laying a query out creates topics and waits for the broker to list them (`query_layout.lay_out`):
tens to hundreds of milliseconds per query, seconds on a loaded broker. Done one query after another
under the worker's lock (the first design), a burst of registrations held that lock for minutes: a
revoke waited behind it until the consumer group gave up on the worker, and the registry went
unapplied. Each layout now runs in its own task, at most `concurrency` at once; its result is kept
under the worker's lock (a few microseconds), and only if the query is still the incarnation the
layout was for (a query deleted or redefined meanwhile is dropped: its internal topics are in the
ledger, which the sweep clears).

Every query laid out adds topics to the worker's subscription (its internal topics), and each change
of the subscription is a rebalance of the consumer group, which holds every operator of every query
from the revoke until the assignment (Faust's eager protocol; docs/joiner.md, "Rebalances"). So
finished layouts are released in waves: while other layouts are still running, a
finished one waits until the oldest waiting has waited `wave_ms`; a lone registration is released
at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

from streamjoin.joiner.layout.query_layout import QueryLayout, status_note
from streamjoin.joiner.registry_follow.status import StatusReporter
from streamjoin.joiner.registry_follow.watch import QuerySpec
from streamjoin.registry import RegistryStore

__all__ = ["QueryLayouts"]

_log = logging.getLogger(__name__)

LayOut = Callable[[QuerySpec], Awaitable[QueryLayout | str]]
"""Lay one query out: its layout, or the problem that stops it (`query_layout.lay_out`)."""


class QueryLayouts:
    """The layouts of a worker's queries by name, and the tasks laying out new ones."""

    def __init__(
        self,
        lay_out: LayOut,
        current: Callable[[str], QuerySpec | None],
        *,
        lock: asyncio.Lock,
        status: StatusReporter,
        registry: RegistryStore,
        on_laid_out: Callable[[], None],
        concurrency: int,
        wave_ms: int = 10_000,
    ) -> None:
        """Lay queries out with `lay_out`; keep a result under `lock` (the worker's) if `current(name)`
        (the query the worker runs now) is still that incarnation; call `on_laid_out` after each (to
        start its operators)."""
        self.by_query: dict[str, QueryLayout] = {}
        self.partitions: dict[str, int] = {}
        """N of each query laid out (its operator partitions)."""
        self._lay_out = lay_out
        self._current = current
        self._lock = lock
        self._status = status
        self._registry = registry
        self._on_laid_out = on_laid_out
        self._slots = asyncio.Semaphore(concurrency)
        self._wave_s = wave_ms / 1000
        self._waiting: dict[str, QueryLayout] = {}  # laid out, released with the next wave
        self._waiting_since: float | None = None
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}

    def want(self, specs: Mapping[str, QuerySpec]) -> None:
        """Release the waiting layouts if their wave is due, and queue the layout of every query of
        `specs` (the worker's current ones) not laid out yet. Call it under the worker's lock."""
        since = self._waiting_since
        if since is not None and (not self._tasks or time.monotonic() - since >= self._wave_s):
            for name, layout in self._waiting.items():
                self.by_query[name], self.partitions[name] = layout, layout.partitions
            self._waiting, self._waiting_since = {}, None
        for name, spec in specs.items():
            if name in self.by_query:
                self._status.problem(name, None)
                continue
            key = (name, spec.incarnation)
            if key not in self._tasks and name not in self._waiting:  # not queued, running or waiting
                self._tasks[key] = asyncio.create_task(self._run(spec), name=f"layout {name}")

    def topics(self) -> set[str]:
        """Return the topics of the queries laid out (a missing input topic is found, not subscribed to)."""
        return {t for lay in self.by_query.values() for t in (*lay.input_topics, *lay.internal_topics)}

    def forget(self, name: str) -> QueryLayout | None:
        """Drop query `name`'s layout (deleted or redefined); return it."""
        self.partitions.pop(name, None)
        return self.by_query.pop(name, None) or self._waiting.pop(name, None)

    async def _run(self, spec: QuerySpec) -> None:
        try:
            await self._lay_out_and_keep(spec)
        finally:
            self._tasks.pop((spec.name, spec.incarnation), None)

    async def _lay_out_and_keep(self, spec: QuerySpec) -> None:
        async with self._slots:
            try:
                layout = await self._lay_out(spec)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a problem until the next try (the next reconcile)
                layout = f"laying the query out failed (retried): {type(exc).__name__}: {exc}"
        name = spec.name
        async with self._lock:
            current, kept = self._current(name), name in self.by_query or name in self._waiting
            if current is None or current.incarnation != spec.incarnation or kept:
                return  # deleted or redefined meanwhile (the sweep clears its internal topics)
            self._status.problem(name, layout if isinstance(layout, str) else None)
            if isinstance(layout, str):
                _log.warning("query %s: %s", name, layout)
                return
            await self._registry.write_partitioning(name, layout.plan)  # `/plan`, the query status
            self._waiting[name] = layout
            if self._waiting_since is None:
                self._waiting_since = time.monotonic()
            _log.info("query %s: %s", name, status_note(layout.plan) or "every input read directly")
        self._on_laid_out()

    async def close(self) -> None:
        """Cancel the layouts queued or running."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
