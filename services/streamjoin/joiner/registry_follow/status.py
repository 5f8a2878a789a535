"""`StatusReporter`: what a worker tells the registry about each query it runs (docs/registry.md).

Every partition operator's status (`positioning`, `running`, `paused`, or `failing` with the error
and since when), stamped with the registry version the worker has applied, and each query-level
problem found before any partition could start (an input topic missing, inputs not
co-partitioned, controls that do not fit the query). A status is written when it changes (state,
error or version), so a control that changes nothing an operator sees (pause, resume) is still
acknowledged with the new version; the whole set is written again every `refresh_s` so a lost write
or a restarted Redis only delays.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping

from streamjoin.joiner.operators.operator import PartitionOperator
from streamjoin.registry import PartitionState, RegistryStore

__all__ = ["StatusReporter"]

_log = logging.getLogger(__name__)
_Key = tuple[str, int | None]
_Written = tuple[PartitionState, int, str | None]


class StatusReporter:
    """Write the statuses of one worker's operators and of the query problems it found."""

    def __init__(self, registry: RegistryStore, worker: str, *, refresh_s: float = 10.0) -> None:
        """Report as `worker` into `registry`."""
        self._registry = registry
        self._worker = worker
        self._refresh_s = refresh_s
        self._written: dict[_Key, tuple[_Written, float]] = {}
        self._problems: dict[str, tuple[str, float]] = {}
        self._lock = asyncio.Lock()

    def problem(self, query: str, error: str | None) -> None:
        """Record (or, with None, clear) a problem of `query` as a whole; the next `sync` reports it."""
        if error is None:
            self._problems.pop(query, None)
        elif query not in self._problems or self._problems[query][0] != error:
            since = self._problems[query][1] if query in self._problems else time.time()
            self._problems[query] = (error, since)

    def retain(self, queries: Iterable[str]) -> None:
        """Forget the problems of every query not in `queries` (the registered ones)."""
        keep = set(queries)
        for query in [q for q in self._problems if q not in keep]:
            self.forget(query)

    def forget(self, query: str) -> None:
        """Forget everything about `query` (deleted or redefined)."""
        self._problems.pop(query, None)
        for key in [k for k in self._written if k[0] == query]:
            del self._written[key]

    async def dropped(
        self, query: str, partition: int, *, released: str | None, partitions: int | None
    ) -> None:
        """Withdraw the status of an operator this worker stopped.

        `released` says why the worker let it go (a rebalance, a shutdown): the status then says so
        until another worker reports the partition; None (query deleted or redefined): cleared.
        """
        async with self._lock:
            self._written.pop((query, partition), None)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1):
                    if released is None:
                        await self._registry.clear_status(query, partition)
                        return
                    now = time.time()
                    await self._registry.set_status(
                        query,
                        partition,
                        worker=self._worker,
                        state="positioning",
                        partitions=partitions,
                        at=now,
                        error=f"released by worker {self._worker} ({released}); no worker runs it yet",
                        error_since=now,
                    )

    async def sync(
        self, ops: Mapping[tuple[str, int], PartitionOperator], partitions: Mapping[str, int], version: int
    ) -> None:
        """Write every status that changed since it was last written (or is older than `refresh_s`).

        `ops` is the worker's live map: an operator stopped meanwhile is not reported.
        """
        async with self._lock:
            await self._sync(ops, partitions, version)

    async def _sync(
        self, ops: Mapping[tuple[str, int], PartitionOperator], partitions: Mapping[str, int], version: int
    ) -> None:
        now = time.time()
        for (query, p), op in list(ops.items()):
            if ops.get((query, p)) is not op:
                continue
            state = _state(op)
            error = op.error[0] if op.error is not None and state == "failing" else None
            since = op.error[1] if error is not None and op.error is not None else None
            await self._write((query, p), (state, version, error), now, partitions.get(query), since)
        for query, (error, since) in list(self._problems.items()):
            await self._write((query, None), ("failing", version, error), now, None, since)
        for key in [k for k in self._written if k[1] is None and k[0] not in self._problems]:
            del self._written[key]
            with contextlib.suppress(Exception):
                await self._registry.clear_status(key[0], None)

    async def _write(
        self, key: _Key, what: _Written, now: float, partitions: int | None, since: float | None
    ) -> None:
        last = self._written.get(key)
        if last is not None and last[0] == what and now - last[1] < self._refresh_s:
            return
        state, version, error = what
        try:
            await self._registry.set_status(
                key[0],
                key[1],
                worker=self._worker,
                state=state,
                partitions=partitions,
                version=version,
                error=error,
                error_since=since,
            )
        except Exception as exc:  # the next sync writes it again
            _log.debug("status of %s not written: %s", key, exc)
            return
        self._written[key] = (what, now)


def _state(op: PartitionOperator) -> PartitionState:
    """Return the reported state of `op`: failing while its last attempt failed, else as it runs."""
    if op.error is not None:
        return "failing"
    if op.state == "running":
        return "paused" if op.paused else "running"
    return "positioning"
