"""The Kafka Streams system of the Kafka mode: build the app in `kstreams/` and write its plan.

`build()` runs `mvn package dependency:copy-dependencies` on `kstreams/pom.xml` once, into
`<cache>/jars/peers-kstreams-<hash of the pom and the Java sources>/` (`streamjoin.dev.jars`: the
embedded broker's cache), and returns that folder: the app's jar beside Kafka Streams 4.1.1 and its
runtime dependencies, from Maven Central. `plan_properties` writes what the app reads: its
StreamsConfig (`streams.*`), the inputs in chain order and each join's window
(`joinplan.chain`).

Semantics (`--semantics` of the bench, `semantics` of the plan): `pairwise` filters every join's
output down to streamjoin's range windows (each member within its own window of the youngest), so
its count is the engine's; `chained` keeps what the join windows alone select, counted by
`chained_count`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from bench.peers.joinplan import chain, load, plan
from bench.peers.kafka_inputs import KafkaInputs

from streamjoin.dev.jars import java_executable, resolve

__all__ = ["JVM_OPTIONS", "Semantics", "argv", "build", "plan_properties"]

Semantics = Literal["pairwise", "chained"]
_APP = Path(__file__).with_name("kstreams")
JVM_OPTIONS = ("-Xms256m", "-Xmx1g", "-XX:+UseG1GC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")


def build() -> Path:
    """Return the folder of the built app and its dependencies (built once per pom and source)."""
    sources = sorted(_APP.glob("src/main/java/**/*.java"))
    return resolve(
        _APP / "pom.xml",
        "peers-kstreams",
        goals=("package", "dependency:copy-dependencies"),
        sources=sources,
    )


def plan_properties(
    directory: Path,
    inputs: KafkaInputs,
    *,
    output: str,
    bootstrap: str,
    application_id: str,
    state_dir: Path,
    semantics: Semantics,
    grace_ms: int,
    backlog: bool,
    threads: int = 1,
) -> str:
    """Return the app's plan (a Java properties file) for the workload in `directory`."""
    definition = load(directory)
    steps = plan(definition)
    windows = {s["name"]: int(s["window_ms"]) for s in definition["streams"]}
    config = {
        "streams.application.id": application_id,
        "streams.bootstrap.servers": bootstrap,
        "streams.state.dir": str(state_dir),
        "streams.num.stream.threads": str(threads),
        "streams.auto.offset.reset": "earliest",
        # Kafka Streams' own producer default is linger.ms 100: the joiner's and the other peers'
        # output is sent within about 5 ms, so the latency compares processing, not batching.
        "streams.producer.linger.ms": "5",
        # On a backlog, wait for every partition of a task to have data before processing
        # (Kafka Streams' setting for joining historical data): otherwise one topic's partition read
        # ahead of another's closes the join windows the other's records needed. Live inputs keep
        # the default (0), which never waits for an empty partition.
        "streams.max.task.idle.ms": "2000" if backlog else "0",
        "output.topic": output,
        "semantics": semantics,
        "grace.ms": str(grace_ms),
        "store": "memory",
        "streams": ",".join(s.stream for s in steps),
    }
    for step in steps:
        config[f"stream.{step.stream}.topic"] = inputs.topics[step.stream]
        config[f"stream.{step.stream}.fields"] = ",".join(("ts", *step.fields))
        config[f"stream.{step.stream}.window.ms"] = str(windows[step.stream])
    for step, joined in zip(steps[1:], chain(definition, steps), strict=True):
        at = f"step.{step.stream}."
        config[at + "equalities"] = ";".join(f"{old}.{of}={nf}" for old, of, nf in step.equalities)
        config[at + "before.ms"] = str(joined.before_ms)
        config[at + "after.ms"] = str(joined.after_ms)
        config[at + "rekey"] = str(joined.rekey).lower()
    return "".join(f"{k}={v}\n" for k, v in config.items())


def argv(folder: Path, plan_file: Path) -> list[str]:
    """Return the command that runs the app on `plan_file`."""
    return [
        java_executable(),
        *JVM_OPTIONS,
        "-cp",
        f"{folder}/*",
        "dev.streamjoin.peers.PeersJoin",
        str(plan_file),
    ]
