"""The queries a worker laid out, and how new ones are laid out: in the background, a few at a time,
off the worker's lock (docs/joiner.md, "Laying queries out").

Laying a query out creates topics and waits for the broker to list them (`query_layout.lay_out`):
tens to hundreds of milliseconds per query, seconds on a loaded broker. Done one query after another
under the worker's lock (the first design), a burst of registrations held that lock for minutes: a
revoke waited behind it until the consumer group gave up on the worker, and the registry went
unapplied. Each layout now runs in its own task, at most `concurrency` at once; its result is kept
under the worker's lock (a few microseconds), and only if the query is still the incarnation the
layout was for (a query deleted or redefined meanwhile is dropped: its internal topics are in the
ledger, which the sweep clears). A layout kept starts the query's operators in the worker's slots
at once: the consumer group's subscription is the slots topic whatever the queries, so no layout
rebalances the group (`worker.slots`).
"""

from __future__ import annotations

import asyncio
import logging
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
        self._running = asyncio.Semaphore(concurrency)
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}

    def want(self, specs: Mapping[str, QuerySpec]) -> None:
        """Queue the layout of every query of `specs` (the worker's current ones) not laid out yet.
        Call it under the worker's lock."""
        for name, spec in specs.items():
            if name in self.by_query:
                self._status.problem(name, None)
                continue
            key = (name, spec.incarnation)
            if key not in self._tasks:  # not queued or running
                self._tasks[key] = asyncio.create_task(self._run(spec), name=f"layout {name}")

    def forget(self, name: str) -> QueryLayout | None:
        """Drop query `name`'s layout (deleted or redefined); return it."""
        self.partitions.pop(name, None)
        return self.by_query.pop(name, None)

    async def _run(self, spec: QuerySpec) -> None:
        try:
            await self._lay_out_and_keep(spec)
        finally:
            self._tasks.pop((spec.name, spec.incarnation), None)

    async def _lay_out_and_keep(self, spec: QuerySpec) -> None:
        async with self._running:
            try:
                layout = await self._lay_out(spec)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a problem until the next try (the next reconcile)
                layout = f"laying the query out failed (retried): {type(exc).__name__}: {exc}"
        name = spec.name
        async with self._lock:
            current, kept = self._current(name), name in self.by_query
            if current is None or current.incarnation != spec.incarnation or kept:
                return  # deleted or redefined meanwhile (the sweep clears its internal topics)
            self._status.problem(name, layout if isinstance(layout, str) else None)
            if isinstance(layout, str):
                _log.warning("query %s: %s", name, layout)
                return
            await self._registry.write_partitioning(name, layout.plan)  # `/plan`, the query status
            self.by_query[name], self.partitions[name] = layout, layout.partitions
            _log.info("query %s: %s", name, status_note(layout.plan) or "every input read directly")
        self._on_laid_out()

    async def close(self) -> None:
        """Cancel the layouts queued or running."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
