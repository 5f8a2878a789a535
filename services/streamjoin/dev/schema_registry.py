"""A real schema registry for the embedded stack: Apicurio Registry, Confluent-compatible REST.

Apicurio Registry (a Java program on Maven Central, fetched once by `streamjoin.dev.jars` through
the pom `maven/schema-registry.pom.xml`) keeps its schemas in memory (an H2 database inside its
JVM, its default storage), so it needs no broker and starts empty. Clients use its Confluent API,
`http://127.0.0.1:PORT/apis/ccompat/v7` (`EmbeddedSchemaRegistry.url`), the URL streamjoin's
`STREAMJOIN_SCHEMA_REGISTRY_URL` takes. The settings that differ from Apicurio's defaults are in
`_REGISTRY_CONFIG`, each with its reason.

>>> registry = EmbeddedSchemaRegistry()
>>> registry.url is None
True
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from streamjoin.dev.jars import JarsUnavailableError, classpath, java_executable
from streamjoin.dev.ports import LOOPBACK, port_accepts
from streamjoin.dev.process import ProcessService, start_on_free_port

__all__ = ["CCOMPAT_PATH", "EmbeddedSchemaRegistry", "registry_runner", "schema_registry_available"]

CCOMPAT_PATH = "/apis/ccompat/v7"
"""Where Apicurio Registry serves the Confluent Schema Registry API."""

_PROGRAM = "schema-registry"
# Where the embedded registry differs from Apicurio's defaults, and why.
_REGISTRY_CONFIG: Mapping[str, str] = {
    # Confluent's registry checks a new version against the latest one by default; Apicurio checks
    # nothing unless told, and the Avro tests mean a registry that behaves like Confluent's.
    "apicurio.rules.global.compatibility": "BACKWARD",
    # 20 pooled connections to an in-memory database serve nothing but start-up time here.
    "apicurio.datasource.jdbc.initial-size": "2",
    "apicurio.datasource.jdbc.min-size": "2",
    # Already Apicurio's default, stated so no token request ever leaves this machine.
    "quarkus.oidc.tenant-enabled": "false",
}
_JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx512m",
    # The quick compiler only: it starts in half the time, and a test's registry serves few requests.
    "-XX:TieredStopAtLevel=1",
    # Two cores shared with the broker, Redis and the workers.
    "-XX:+UseSerialGC",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
)


def registry_runner() -> Path:
    """Return the registry's runnable jar, fetching it first if needed.

    Raises:
        JarsUnavailableError: it is not cached and cannot be fetched, or the fetched folder lacks it.
    """
    folder = classpath(_PROGRAM)
    runners = sorted(folder.glob("*-runner.jar"))
    if not runners:
        raise JarsUnavailableError(f"{_PROGRAM}: no *-runner.jar in {folder}")
    return runners[-1]


def schema_registry_available() -> str | None:
    """Return why the schema registry cannot run here (no Java, no Maven and nothing cached), or None."""
    try:
        java_executable()
        registry_runner()
    except JarsUnavailableError as error:
        return str(error)
    return None


class _SubjectsProbe:
    """Ready when `GET /subjects` of the Confluent API answers 200 (the storage is up)."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._url = f"http://{LOOPBACK}:{port}{CCOMPAT_PATH}/subjects"

    def __call__(self) -> bool:
        if not port_accepts(self._port):
            return False
        with urllib.request.urlopen(self._url, timeout=2) as response:
            return bool(response.status == 200)


class EmbeddedSchemaRegistry(ProcessService):
    """Apicurio Registry on 127.0.0.1:PORT, its schemas in memory: gone when it stops."""

    name = "schema-registry"

    def __init__(self, *, ready_timeout_ms: int = 120_000) -> None:
        """Describe the registry; nothing runs until `start`.

        Args:
            ready_timeout_ms: how long `start` waits for it to answer (a JVM starting on 2 busy
                cores: 10 to 50 s, docs/embedded-stack.md).
        """
        super().__init__(ready_timeout_ms=ready_timeout_ms)

    @property
    def url(self) -> str | None:
        """The Confluent API's base URL, `http://127.0.0.1:PORT/apis/ccompat/v7`, once started."""
        return f"http://{LOOPBACK}:{self.port}{CCOMPAT_PATH}" if self.port is not None else None

    def endpoints(self) -> Mapping[str, str]:
        """Where clients reach the registry."""
        return {"Schema registry (Confluent API)": self.url} if self.url else {}

    def start(self, workdir: Path) -> None:
        """Start the registry (its log and temporary files under `workdir`); wait until it answers.

        Raises:
            JarsUnavailableError: no Java, or its jars cannot be had.
        """
        java = java_executable()
        runner = registry_runner()
        folder = workdir / self.name
        folder.mkdir(parents=True, exist_ok=True)

        def argv(port: int) -> list[str]:
            settings = {**_REGISTRY_CONFIG, "quarkus.http.host": LOOPBACK, "quarkus.http.port": str(port)}
            properties = [f"-D{key}={value}" for key, value in settings.items()]
            return [java, *_JVM_OPTIONS, f"-Djava.io.tmpdir={folder}", *properties, "-jar", str(runner)]

        self._process, self.port, self.ready_ms = start_on_free_port(
            self.name,
            argv,
            _SubjectsProbe,
            log_path=folder / "registry.log",
            env=_registry_env(),
            cwd=folder,  # Quarkus also reads `.env` and `config/application.properties` in its folder
            attempts=3,
            timeout_ms=self._ready_timeout_ms,
        )


def _registry_env() -> dict[str, str]:
    """Our environment without what the registry's JVM would read instead of our settings: Quarkus
    maps `QUARKUS_*` and `APICURIO_*` variables onto its configuration."""
    skip = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH")
    return {
        key: value
        for key, value in os.environ.items()
        if key not in skip and not key.startswith(("QUARKUS_", "APICURIO_"))
    }
