"""A real schema registry for the live tests: Karapace (Confluent-compatible REST), on the broker.

Karapace is not on PyPI, so the repository vendors its source (third_party/karapace) and runs it
from a venv of its own, built on demand (streamjoin.dev.karapace_venv). `$STREAMJOIN_KARAPACE_PYTHON`
overrides that: a Python that can `import karapace` itself (docs/formats.md, "Testing").
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from streamjoin.dev.karapace_venv import KarapaceRuntime, KarapaceUnavailableError, ensure_karapace_venv
from streamjoin.dev.ports import LOOPBACK, port_accepts
from streamjoin.dev.process import ProcessService, start_on_free_port

__all__ = [
    "KARAPACE_PYTHON_ENV",
    "EmbeddedSchemaRegistry",
    "KarapaceRuntime",
    "KarapaceUnavailableError",
    "find_karapace",
]

KARAPACE_PYTHON_ENV = "STREAMJOIN_KARAPACE_PYTHON"


def find_karapace() -> KarapaceRuntime:
    """Return how to run Karapace: `$STREAMJOIN_KARAPACE_PYTHON` (its own `karapace`) when set,
    else the vendored copy in its venv, built if missing. Raises KarapaceUnavailableError saying why
    neither can run."""
    python = os.environ.get(KARAPACE_PYTHON_ENV)
    if python:
        if not os.access(python, os.X_OK):
            raise KarapaceUnavailableError(f"${KARAPACE_PYTHON_ENV}={python} is not an executable")
        return KarapaceRuntime(python=Path(python), source=None)
    return ensure_karapace_venv()


class _WriteProbe:
    """Ready when the registry accepts a registration (Karapace waits to be primary first)."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._url = f"http://{LOOPBACK}:{port}/subjects/streamjoin-ready-value/versions"

    def __call__(self) -> bool:
        if not port_accepts(self._port):
            return False
        body = json.dumps({"schema": '"string"'}).encode()
        request = urllib.request.Request(
            self._url, body, {"Content-Type": "application/vnd.schemaregistry.v1+json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False


class EmbeddedSchemaRegistry(ProcessService):
    """Karapace on 127.0.0.1:PORT, keeping its schemas in the broker's `_schemas` topic."""

    name = "schema-registry"

    def __init__(self, runtime: KarapaceRuntime, *, ready_timeout_ms: int = 60_000) -> None:
        """Describe the registry run by `runtime`; nothing runs until `start`."""
        super().__init__(ready_timeout_ms=ready_timeout_ms)
        self._runtime = runtime

    @property
    def url(self) -> str | None:
        """`http://127.0.0.1:PORT` once started."""
        return f"http://{LOOPBACK}:{self.port}" if self.port is not None else None

    def endpoints(self) -> Mapping[str, str]:
        """Where clients reach the registry."""
        return {"Schema registry": self.url} if self.url else {}

    def start(self, workdir: Path, bootstrap: str) -> None:
        """Start Karapace against the broker at `bootstrap`; wait until it accepts a registration."""
        # Neither our KARAPACE_* settings nor our PYTHONPATH (streamjoin's code) reach its process.
        base = {k: v for k, v in os.environ.items() if not k.startswith("KARAPACE_") and k != "PYTHONPATH"}
        if self._runtime.source is not None:
            base["PYTHONPATH"] = os.fspath(self._runtime.source)

        def argv(port: int) -> list[str]:
            # Karapace reads its settings from the environment; `env` sets them per attempt's port.
            settings = {
                "KARAPACE_BOOTSTRAP_URI": bootstrap,
                "KARAPACE_HOST": LOOPBACK,
                "KARAPACE_PORT": str(port),
                "KARAPACE_ADVERTISED_HOSTNAME": LOOPBACK,
                "KARAPACE_REPLICATION_FACTOR": "1",
                "KARAPACE_TOPIC_NAME": f"_schemas-{port}",
                "KARAPACE_COMPATIBILITY": "BACKWARD",
                "KARAPACE_LOG_LEVEL": "WARNING",
            }
            python = os.fspath(self._runtime.python)
            return ["env", *(f"{k}={v}" for k, v in settings.items()), python, "-m", "karapace"]

        self._process, self.port, self.ready_ms = start_on_free_port(
            self.name,
            argv,
            _WriteProbe,
            log_path=workdir / "schema-registry.log",
            env=base,
            attempts=3,
            timeout_ms=self._ready_timeout_ms,
        )
