"""The systems of the Kafka mode, each a command over input topics already on the broker that
writes every result to its own output topic.

- `joiner`, `joiner-N`: streamjoin's joiner, 1 worker or one per core (`joiner_kafka.py`); Redis,
  its state store, counts as part of it.
- `kstreams`: Kafka Streams 4.1 (`kstreams/`), one stream thread, in-memory window stores with
  their changelog topics, at-least-once (the default), pairwise semantics: its count is the
  engine's. `kstreams-chained`: the same app with the join windows alone (its own count).
- `flink`: Flink 2.2 SQL with the Kafka connector, parallelism 1, no checkpointing.
- `spark`: Spark 4.2 Structured Streaming with its Kafka source and sink, `local[2]`.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench.peers.connectors import Connector, jars
from bench.peers.kafka_inputs import KafkaInputs
from bench.peers.kstreams_app import Semantics, argv, build, plan_properties

__all__ = ["KAFKA_SYSTEMS", "Joiner", "KStreams", "KafkaSystem", "PeerJob", "Setting", "python_env"]

_ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Setting:
    """Where a system runs a workload: its data, the topics, the broker and Redis."""

    directory: Path
    inputs: KafkaInputs
    output: str
    bootstrap: str
    redis_url: str
    peers_python: Path
    workdir: Path
    live: bool = False
    """True when the inputs arrive while the system runs (latency), False for a backlog."""


class KafkaSystem(Protocol):
    """One system of the Kafka mode."""

    @property
    def name(self) -> str:
        """The name on the command line (`--systems`)."""
        ...

    @property
    def label(self) -> str:
        """The name in the table."""
        ...

    @property
    def semantics(self) -> Semantics:
        """Which count it must reach: streamjoin's (`pairwise`) or Kafka Streams' chain's."""
        ...

    @property
    def uses_redis(self) -> bool:
        """Whether Redis is part of it (its CPU and memory count)."""
        ...

    @property
    def jvm(self) -> bool:
        """Whether it needs Java (and, for PyFlink and PySpark, the peers' virtual environment)."""
        ...

    def prepare(self) -> None:
        """Build or fetch what it needs (once, before any measurement)."""
        ...

    def argv(self, s: Setting) -> list[str]:
        """Return the command that runs it on `s` until stopped."""
        ...


@dataclass(frozen=True)
class Joiner:
    """streamjoin's joiner with `workers` workers, each started with `worker_args` added; with a
    `profile_dir`, worker 0 of each run is recorded by py-spy into `<profile_dir>/<output>.txt`."""

    workers: int
    worker_args: tuple[str, ...] = ()
    profile_dir: Path | None = None
    semantics: Semantics = "pairwise"
    uses_redis: bool = True
    jvm: bool = False

    @property
    def name(self) -> str:
        """`joiner` for one worker, `joiner-N` for N."""
        return "joiner" if self.workers == 1 else f"joiner-{self.workers}"

    @property
    def label(self) -> str:
        """The table's name."""
        plural = "worker" if self.workers == 1 else "workers"
        return f"streamjoin joiner, {self.workers} {plural} (+ Redis)"

    def prepare(self) -> None:
        """Nothing to prepare."""

    def argv(self, s: Setting) -> list[str]:
        """Return the launcher's command."""
        topics = {stream: [topic, s.inputs.keys[stream]] for stream, topic in s.inputs.topics.items()}
        profile = ["--py-spy", str(self.profile_dir / f"{s.output}.txt")] if self.profile_dir else []
        return [sys.executable, "-m", "bench.peers.joiner_kafka", str(s.directory),
                "--bootstrap", s.bootstrap, "--redis-url", s.redis_url, "--topics", json.dumps(topics),
                "--output", s.output, "--workers", str(self.workers),
                *(f"--worker-arg={a}" for a in self.worker_args),
                *profile]  # fmt: skip


@dataclass(frozen=True)
class KStreams:
    """The Kafka Streams app; `grace_ms` is every join window's grace period."""

    semantics: Semantics = "pairwise"
    grace_ms: int = 10_000
    uses_redis: bool = False
    jvm: bool = True

    @property
    def name(self) -> str:
        """`kstreams`, or `kstreams-chained`."""
        return "kstreams" if self.semantics == "pairwise" else "kstreams-chained"

    @property
    def label(self) -> str:
        """The table's name."""
        return "Kafka Streams 4.1, 1 thread" + ("" if self.semantics == "pairwise" else ", chained windows")

    def prepare(self) -> None:
        """Build the app (cached)."""
        build()

    def argv(self, s: Setting) -> list[str]:
        """Write the app's plan into the work folder; return the command."""
        plan_file = s.workdir / f"{s.output}.properties"
        plan_file.write_text(
            plan_properties(
                s.directory,
                s.inputs,
                output=s.output,
                bootstrap=s.bootstrap,
                application_id=f"peers-{s.output}",
                state_dir=s.workdir / f"{s.output}.state",
                semantics=self.semantics,
                grace_ms=self.grace_ms,
                backlog=not s.live,
            )
        )
        return argv(build(), plan_file)


@dataclass(frozen=True)
class PeerJob:
    """A PyFlink or PySpark job in the peers' virtual environment, given its Kafka connector's jars."""

    name: str
    label: str
    module: str
    connector: Connector
    semantics: Semantics = "pairwise"
    uses_redis: bool = False
    jvm: bool = True

    def prepare(self) -> None:
        """Fetch the connector (cached)."""
        jars(self.connector)

    def argv(self, s: Setting) -> list[str]:
        """Return the job's command."""
        return [str(s.peers_python), "-m", self.module, str(s.directory), "--bootstrap", s.bootstrap,
                "--topics", json.dumps(s.inputs.topics), "--output", s.output,
                "--jars", ",".join(str(j) for j in jars(self.connector))]  # fmt: skip


def python_env() -> dict[str, str]:
    """The environment of every system: the repository's sources first on the Python path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT / "services"), str(_ROOT)])}


KAFKA_SYSTEMS: dict[str, KafkaSystem] = {
    s.name: s
    for s in (
        Joiner(1),
        Joiner(os.cpu_count() or 2),
        KStreams(),
        KStreams("chained"),
        PeerJob("flink", "Flink 2.2 SQL, p1", "bench.peers.flink_kafka_job", "flink-kafka"),
        PeerJob("spark", "Spark 4.2 SS, local[2]", "bench.peers.spark_kafka_job", "spark-kafka"),
    )
}
