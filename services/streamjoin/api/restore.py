"""Keep the registry in Redis restored from its log while the control plane runs.

At start-up the guard restores the registry if Redis lost it (no epoch) or lost acknowledged
changes (its version is below the log's last one); the app starts serving after that, or after
`api_registry_restore_wait_ms`, whichever is first. Then it checks the epoch every
`api_registry_check_ms` and restores again when a Redis restarted empty. Meanwhile every request
that reads or writes the registry gets 503 (`RegistryUnavailableError`), never an empty answer.

A restore takes only authentic records holding entities the control plane would register (`check`,
docs/registry.md "Authentication"); the records it refused are counted by reason (`refused`, the
metric `streamjoin_registry_log_refused_total`) and named in `/readyz`. The start-up check and each
restore also re-sign from Redis what the log does not authenticate (`streamjoin.registry.seal`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter

from streamjoin.registry import EntityCheck, RefusalReason, RefusedEntry, RegistryStore, Restored

__all__ = ["RegistryGuard"]

_log = logging.getLogger(__name__)


class RegistryGuard:
    """Restore `store` from its log at start-up and whenever Redis comes back without it."""

    def __init__(
        self,
        store: RegistryStore,
        *,
        check: EntityCheck | None = None,
        check_ms: int = 500,
        retry_ms: int = 1_000,
    ) -> None:
        """Watch `store` (which must have a log) every `check_ms`; retry a failed restore after `retry_ms`.

        `check`: what a restored entity must pass (the control plane's registration checks).
        """
        self._store = store
        self._check = check
        self._check_s = check_ms / 1000
        self._retry = retry_ms / 1000
        self._task: asyncio.Task[None] | None = None
        self._first = asyncio.Event()
        self.restores: list[Restored] = []
        self.refused: Counter[RefusalReason] = Counter()
        """Log records refused by this process's restores, by reason (a counter)."""
        self.last_error: str | None = None

    @property
    def last_refused(self) -> tuple[RefusedEntry, ...]:
        """Return the records the last restore refused."""
        return self.restores[-1].refused if self.restores else ()

    async def start(self, *, wait_ms: int) -> bool:
        """Start watching; wait up to `wait_ms` for the first attempt; return whether it restored.

        A first attempt that fails (Redis or the broker unreachable) does not hold the start-up: the
        guard keeps retrying while requests get 503.
        """
        with contextlib.suppress(Exception):  # advice only; the guard reports unreachable Redis itself
            persistence = await self._store.persistence()
            if persistence not in ("aof-always", "unknown"):
                _log.warning(
                    "Redis persists as %s: a Redis crash can undo answered writes; exactly once needs "
                    "appendonly yes with appendfsync always (docs/exactly-once.md)",
                    persistence,
                )
        self._task = asyncio.create_task(self._run(), name="registry-guard")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_ms / 1000):
                await self._first.wait()
        return self._first.is_set() and self.last_error is None

    async def stop(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        check_log = True
        while True:
            try:
                if check_log or await self._store.epoch() is None:
                    restored = await self._store.restore(check_log=check_log, check=self._check)
                    if restored is not None:
                        self.restores.append(restored)
                        self.refused.update(r.reason for r in restored.refused)
                    check_log = False
                self.last_error = None
                self._first.set()
                await asyncio.sleep(self._check_s)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis or the broker unreachable: requests get 503 meanwhile
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._first.set()
                _log.warning("restoring the registry failed (retrying): %s", self.last_error)
                await asyncio.sleep(self._retry)
