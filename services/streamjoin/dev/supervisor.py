"""Keep the dev stack's services running, as compose's `restart: always` or a Kubernetes Deployment would.

A service that can come back at the same address (the control plane and the joiner on their port,
Apache Kafka on its port and data) is started again when its process exits, whatever the exit code
(75 asks for it; a crash deserves it too). A service that cannot (Redis, which would come back
empty on a new port; the memory-only Tansu, which would lose every topic) ends the stack. A service
that keeps dying (more than `max_restarts` within `window_ms`) is not started again either:
like Kubernetes' crash-loop back-off, that needs a human.

>>> Supervisor(stack=None, max_restarts=3).restarts
[]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from streamjoin.dev.process import ManagedProcess

__all__ = ["CrashLoopError", "Restart", "Restartable", "Supervisor"]


@runtime_checkable
class Restartable(Protocol):
    """A service that can be started again at the same address after its process exited."""

    @property
    def name(self) -> str:
        """A short name ("api", "joiner", "broker")."""
        ...

    @property
    def process(self) -> ManagedProcess | None:
        """Its process once started."""
        ...

    def restart(self) -> None:
        """Start it again where it was (same port, same data) and wait until it is ready."""
        ...


class _Stack(Protocol):
    @property
    def workdir(self) -> Path: ...

    def dead_services(self) -> Sequence[object]: ...


@dataclass(frozen=True, slots=True)
class Restart:
    """One restart the supervisor made: which service, how its process had ended, when."""

    service: str
    exit_code: int | None
    at_monotonic: float


class CrashLoopError(RuntimeError):
    """A service exited and will not be started again (it cannot be, or it keeps dying)."""


class Supervisor:
    """Start again the dead services of a stack that can be restarted; raise for the others."""

    def __init__(
        self,
        stack: _Stack | None,
        *,
        max_restarts: int = 5,
        window_ms: int = 60_000,
        on_restart: Callable[[Restart], None] | None = None,
    ) -> None:
        """Args:
        stack: the running stack (its `dead_services()` are checked).
        max_restarts: how many restarts of one service within `window_ms` are allowed.
        window_ms: the crash-loop window.
        on_restart: called after each restart (the CLI prints it).
        """
        self._stack = stack
        self._max_restarts = max_restarts
        self._window_s = window_ms / 1000
        self._on_restart = on_restart
        self.restarts: list[Restart] = []

    def check(self) -> None:
        """Restart every dead restartable service once.

        Raises:
            CrashLoopError: a dead service cannot be restarted, or has been restarted too often.
        """
        if self._stack is None:
            return
        for service in self._stack.dead_services():
            name = str(getattr(service, "name", service))
            process: ManagedProcess | None = getattr(service, "process", None)
            code = process.stop(timeout_ms=0) if process is not None else None
            if not isinstance(service, Restartable):
                raise CrashLoopError(
                    f"{name} exited with code {code}, and it cannot be started again at the same "
                    f"address{_tail(process)}"
                )
            now = time.monotonic()
            recent = [r for r in self.restarts if r.service == name and now - r.at_monotonic < self._window_s]
            if len(recent) >= self._max_restarts:
                times = f"{len(recent) + 1} times in {self._window_s:.0f} s (last exit code {code})"
                raise CrashLoopError(f"{name} exited {times}; not starting it again{_tail(process)}")
            service.restart()
            restart = Restart(name, code, now)
            self.restarts.append(restart)
            if self._on_restart is not None:
                self._on_restart(restart)


def _tail(process: ManagedProcess | None) -> str:
    return f"\n--- its log ---\n{process.log_tail()}" if process is not None else ""
