"""The product's own services in the embedded stack: the control plane and a joiner worker.

Each runs as the same command an operator runs (`streamjoin api`, `streamjoin joiner`), in its own
process group on free loopback ports, configured through the `STREAMJOIN_*` environment of the
stack, and is ready when its readiness endpoint answers 200.
"""

from __future__ import annotations

import os
import secrets
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path

import httpx

from streamjoin.dev.ports import LOOPBACK, free_port
from streamjoin.dev.process import ManagedProcess, ProcessService

__all__ = ["EmbeddedApi", "EmbeddedJoiner", "streamjoin_argv"]


def streamjoin_argv(*args: str) -> list[str]:
    """Return the argv of `streamjoin ARGS...` run with this interpreter (no PATH lookup)."""
    return [sys.executable, "-c", "from streamjoin.cli.main import main; main()", *args]


def _ready(url: str) -> bool:
    response = httpx.get(url, timeout=2)
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:200]}")
    return True


class _ServiceProcess(ProcessService, ABC):
    """A `streamjoin` sub-command run as a managed process, ready when `_ready_url` answers 200."""

    def __init__(self, env: Mapping[str, str], ready_timeout_ms: int) -> None:
        super().__init__(ready_timeout_ms=ready_timeout_ms)
        self._env = dict(env)
        self._workdir: Path | None = None

    @abstractmethod
    def _argv(self) -> list[str]: ...

    @abstractmethod
    def _ready_url(self) -> str: ...

    def start(self, workdir: Path) -> None:
        """Start the process (log under `workdir`) and wait until it reports ready."""
        self.port = free_port()
        self._workdir = workdir
        self._launch()

    def restart(self) -> None:
        """Start the process again on its port (after it exited) and wait until it reports ready."""
        if self._process is not None:
            self._process.stop(timeout_ms=0)
        self._launch()

    def _launch(self) -> None:
        workdir = self._workdir
        if workdir is None:
            raise RuntimeError(f"{self.name} was never started")
        process = ManagedProcess(
            self.name, self._argv(), log_path=workdir / f"{self.name}.log", env={**os.environ, **self._env}
        )
        process.start()
        self._process = process
        ready = self._ready_url()
        self.ready_ms = process.wait_ready(lambda: _ready(ready), timeout_ms=self._ready_timeout_ms)


class EmbeddedApi(_ServiceProcess):
    """`streamjoin api` on a free loopback port, with a fresh bearer token for writes."""

    name = "api"

    def __init__(
        self, env: Mapping[str, str], *, token: str | None = None, ready_timeout_ms: int = 30_000
    ) -> None:
        self.token = token or secrets.token_urlsafe(16)
        super().__init__({**env, "STREAMJOIN_API_TOKEN": self.token}, ready_timeout_ms)

    @property
    def url(self) -> str:
        """The API's base URL."""
        return f"http://{LOOPBACK}:{self.port}"

    def _argv(self) -> list[str]:
        return streamjoin_argv("api", "--host", LOOPBACK, "--port", str(self.port))

    def _ready_url(self) -> str:
        return f"{self.url}/readyz"

    def endpoints(self) -> Mapping[str, str]:
        """Where users reach the control plane."""
        if self.port is None:
            return {}
        return {
            "Control plane (REST)": f"{self.url}/v1  (docs: {self.url}/docs)",
            "Prometheus metrics": f"{self.url}/metrics",
            "API token (writes)": self.token,
        }


class EmbeddedJoiner(_ServiceProcess):
    """One `streamjoin joiner` worker, with its readiness endpoint on a free loopback port."""

    name = "joiner"

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        worker_id: str = "dev-1",
        ready_timeout_ms: int = 60_000,
        fetch_wait_ms: int | None = None,
    ) -> None:
        """`fetch_wait_ms`: the workers' fetch wait (None: the product's default); the Tansu
        fallback needs a short one (`streamjoin.kafka.DEFAULT_FETCH_WAIT_MS` says why)."""
        super().__init__(env, ready_timeout_ms)
        self.worker_id = worker_id
        self._fetch_wait = [] if fetch_wait_ms is None else ["--fetch-wait-ms", str(fetch_wait_ms)]

    def _argv(self) -> list[str]:
        return streamjoin_argv(
            "joiner", "--worker-id", self.worker_id, "--ready-host", LOOPBACK, "--ready-port", str(self.port),
            *self._fetch_wait,
        )  # fmt: skip

    def _ready_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/readyz"

    def endpoints(self) -> Mapping[str, str]:
        """Where the joiner reports readiness."""
        return {"Joiner readiness": self._ready_url()} if self.port is not None else {}
