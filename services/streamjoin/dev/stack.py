"""The embedded stack: the broker and Redis (and, on request, a schema registry), plus any service
added later, started and stopped as one.

Services start in the order they were added and stop in reverse order; stopping always stops every
service, whatever fails on the way, so nothing is left running.

Usage::

    with EmbeddedStack() as stack:
        print(stack.bootstrap, stack.redis_url)
        stack.add(some_joiner_service)  # an `EmbeddedService`, started at once
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol

from streamjoin.dev.broker import EmbeddedBroker
from streamjoin.dev.kafka_broker import KafkaBroker, kafka_available
from streamjoin.dev.process import ManagedProcess
from streamjoin.dev.redis_server import EmbeddedRedis
from streamjoin.dev.schema_registry import EmbeddedSchemaRegistry
from streamjoin.settings import Settings, load_settings

__all__ = ["BROKER_ENV", "BrokerKind", "EmbeddedService", "EmbeddedStack", "choose_broker"]

_log = logging.getLogger(__name__)

BROKER_ENV = "STREAMJOIN_DEV_BROKER"
BrokerKind = Literal["kafka", "tansu"]


def choose_broker(requested: str | None = None) -> BrokerKind:
    """Return which broker the stack runs: `requested`, else `$STREAMJOIN_DEV_BROKER`, else Apache
    Kafka where Java and its jars (or Maven to fetch them) are here, else the Tansu fallback."""
    wanted = requested or os.environ.get(BROKER_ENV) or "auto"
    if wanted in ("kafka", "tansu"):
        return "kafka" if wanted == "kafka" else "tansu"
    if wanted != "auto":
        raise ValueError(f"${BROKER_ENV} must be kafka, tansu or auto, not {wanted!r}")
    why_not = kafka_available()
    if why_not is None:
        return "kafka"
    _log.warning("Apache Kafka cannot run here (%s): using the embedded Tansu broker instead", why_not)
    return "tansu"


class EmbeddedService(Protocol):
    """A service the stack runs: a broker, Redis, and later the joiner and the control plane."""

    @property
    def name(self) -> str:
        """A short name ("broker", "redis", "joiner")."""
        ...

    @property
    def process(self) -> ManagedProcess | None:
        """The service's process once started."""
        ...

    def start(self, workdir: Path) -> None:
        """Start the service (logs and data under `workdir`) and return once it is ready."""
        ...

    def stop(self, *, timeout_ms: int = ...) -> None:
        """Stop the service within about `timeout_ms`; idempotent."""
        ...

    def endpoints(self) -> Mapping[str, str]:
        """Where users reach the service, label to address (e.g. {"Kafka bootstrap": "127.0.0.1:1234"})."""
        ...


class EmbeddedStack:
    """The embedded broker and Redis, and every service added, on free loopback ports."""

    def __init__(
        self,
        *,
        workdir: Path | None = None,
        keep_workdir: bool = False,
        ready_timeout_ms: int = 30_000,
        stop_timeout_ms: int = 10_000,
        broker: BrokerKind | None = None,
        schema_registry: bool = False,
    ) -> None:
        """Describe the stack; nothing runs until `start` (or `with`).

        Args:
            workdir: where logs and data go; None: a new temporary directory, removed by `stop`
                unless `keep_workdir` or a service failed.
            keep_workdir: keep a temporary work directory after `stop`.
            ready_timeout_ms: how long each service may take to become ready.
            stop_timeout_ms: how long each service has to exit after SIGTERM before it is killed.
            broker: "kafka" (Apache Kafka) or "tansu"; None: `choose_broker()`.
            schema_registry: also run a schema registry (Apicurio Registry), after Redis.
        """
        self._workdir_arg = workdir
        self._keep_workdir = keep_workdir
        self._stop_timeout_ms = stop_timeout_ms
        self._workdir: Path | None = None
        self._failed = False
        self.broker_kind = choose_broker(broker)
        self.broker: KafkaBroker | EmbeddedBroker = (
            KafkaBroker(ready_timeout_ms=max(ready_timeout_ms, 120_000))
            if self.broker_kind == "kafka"
            else EmbeddedBroker(ready_timeout_ms=ready_timeout_ms)
        )
        self.redis = EmbeddedRedis(ready_timeout_ms=ready_timeout_ms)
        self.schema_registry = EmbeddedSchemaRegistry() if schema_registry else None
        self._services: list[EmbeddedService] = [self.broker, self.redis]
        if self.schema_registry is not None:
            self._services.append(self.schema_registry)
        self._started: list[EmbeddedService] = []
        self._running = False
        # One key per run, passed to every service the stack starts (`settings`): the registry's log
        # is authenticated on a laptop too. Each run's broker starts empty, so a new key loses nothing.
        self.registry_key = secrets.token_hex(32)

    @property
    def workdir(self) -> Path:
        """The directory holding the services' logs and data."""
        if self._workdir is None:
            raise RuntimeError("the stack is not started")
        return self._workdir

    @property
    def bootstrap(self) -> str:
        """The broker's `host:port`."""
        if self.broker.bootstrap is None:
            raise RuntimeError("the stack is not started")
        return self.broker.bootstrap

    @property
    def redis_url(self) -> str:
        """The Redis URL."""
        if self.redis.url is None:
            raise RuntimeError("the stack is not started")
        return self.redis.url

    @property
    def schema_registry_url(self) -> str | None:
        """The schema registry's Confluent API URL; None when the stack runs none."""
        return self.schema_registry.url if self.schema_registry is not None else None

    @property
    def services(self) -> tuple[EmbeddedService, ...]:
        """Every service, in start order."""
        return tuple(self._services)

    @property
    def listed_ends_exact(self) -> bool:
        """Whether the stack's broker lists a partition's end exactly (Tansu does not: `end_offsets`)."""
        return self.broker_kind != "tansu"

    def settings(self, **flags: object) -> Settings:
        """Return the settings a service of this stack runs with (flags override): its data (back-fill
        jobs and their output) under the work directory, like everything else the stack writes."""
        flags.setdefault("data_dir", self.workdir / "data")
        if self.schema_registry_url is not None:
            flags = {"schema_registry_url": self.schema_registry_url, **flags}
        flags.setdefault("registry_key", self.registry_key)
        flags.setdefault("kafka_listed_ends_exact", self.listed_ends_exact)
        return load_settings(kafka_bootstrap=self.bootstrap, redis_url=self.redis_url, **flags)

    def start(self) -> None:
        """Start every service in order; if one fails, stop those already started and re-raise."""
        if self._running:
            raise RuntimeError("the stack is already started")
        if self._workdir_arg is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="streamjoin-stack-"))
        else:
            self._workdir = self._workdir_arg
            self._workdir.mkdir(parents=True, exist_ok=True)
        self._running = True
        try:
            for service in self._services:
                self._start(service)
        except BaseException:
            self._failed = True
            self.stop()
            raise

    def add(self, service: EmbeddedService) -> None:
        """Add a service: started now if the stack runs (stopped before the services it needs)."""
        self._services.append(service)
        if self._running:
            try:
                self._start(service)
            except BaseException:
                self._failed = True
                raise

    def stop(self) -> None:
        """Stop every started service in reverse order; each one is stopped even if another fails."""
        errors: list[BaseException] = []
        while self._started:
            service = self._started.pop()
            try:
                service.stop(timeout_ms=self._stop_timeout_ms)
            except Exception as exc:
                _log.exception("stopping %s failed", service.name)
                errors.append(exc)
        self._running = False
        if self._workdir is not None and self._workdir_arg is None:
            if self._keep_workdir or self._failed:
                _log.info("logs of the embedded stack kept in %s", self._workdir)
            else:
                shutil.rmtree(self._workdir, ignore_errors=True)
        if errors:
            raise RuntimeError(f"{len(errors)} service(s) failed to stop: {errors}")

    def dead_services(self) -> list[EmbeddedService]:
        """Return the started services whose process exited on its own."""
        return [s for s in self._started if s.process is not None and not s.process.running]

    def endpoints(self) -> list[tuple[str, str, str]]:
        """Return (service, label, address) for every started service."""
        return [(s.name, label, address) for s in self._started for label, address in s.endpoints().items()]

    def _start(self, service: EmbeddedService) -> None:
        # Registered before it starts: a service that half-started is stopped too.
        self._started.append(service)
        service.start(self.workdir)

    def __enter__(self) -> EmbeddedStack:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None and not issubclass(exc_type, KeyboardInterrupt):
            self._failed = True
        self.stop()
