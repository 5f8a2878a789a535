"""One throughput run of the Kafka mode: start a system on input topics that hold the whole
workload, wait until its output topic holds the expected count, measure, stop it.

Figures, all from the system's start (its start-up included, as a deployment pays it):
`wall_s` until the output held the expected count; `cpu_s` of every process of the system (its
process tree, plus Redis for the joiner); `broker_cpu_s`, the broker's CPU over the same span,
apart; `peak_rss_kb`, the sum of the tree's peak resident sets (plus Redis' resident set at the
end, for the joiner); `first_result_s` and `cpu_to_first_s`, when the first result arrived and the
CPU used until then (mostly start-up). The output is counted from the topic's end offsets every
0.2 s, and counted again a second after the expected count, so a surplus shows as a mismatch.
`late`: the late records per input partition a system reports when stopped (the joiner's), or None.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peers.kafka_inputs import PARTITIONS
from bench.peers.kafka_systems import KafkaSystem, Setting, python_env
from bench.peers.proctree import TreeMeter, cpu_seconds, rss_kb
from confluent_kafka import Consumer, KafkaException, TopicPartition

from streamjoin.dev.process import ManagedProcess
from streamjoin.kafka import Admin

__all__ = ["Services", "drop_topics", "output_count", "reported_late", "run_system", "start"]

_POLL_S = 0.2
_SETTLE_S = 1.0
_START_S = 900.0
"""How long a system may take to its first result (a JVM's start on a loaded machine: minutes)."""


@dataclass(frozen=True)
class Services:
    """The pids of the broker and Redis, measured apart from the system."""

    broker: int | None
    redis: int | None


def output_count(consumer: Consumer, topic: str, attempts: int = 20) -> int:
    """Return the number of records in `topic` (the sum of its partitions' end offsets), asking
    again on a transient error (a new topic's leader not known yet)."""
    for attempt in range(attempts):
        try:
            ends = [
                consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)
            ]
            return sum(ends)
        except KafkaException:
            if attempt == attempts - 1:
                raise
            time.sleep(0.25)
    raise AssertionError("unreachable")


def reported_late(log: Path) -> dict[str, int] | None:
    """Return the late records per input partition that a system printed to `log` (`{"late": ...}`
    on a line of its own), or None if it printed none."""
    late = None
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith('{"late":'):
                late = json.loads(line)["late"]
    return late


def start(system: KafkaSystem, s: Setting) -> ManagedProcess:
    """Start `system` on `s`, its output in the work folder's `<output>.log`."""
    proc = ManagedProcess(
        system.name, system.argv(s), log_path=s.workdir / f"{s.output}.log", env=python_env()
    )
    proc.start()
    return proc


def run_system(
    system: KafkaSystem,
    s: Setting,
    services: Services,
    expect: int,
    stall_s: float,
    start_s: float = _START_S,
) -> dict[str, Any]:
    """Run `system` until its output holds `expect` results, or has no result `start_s` after its
    start, or stopped growing for `stall_s`."""
    consumer = Consumer({"bootstrap.servers": s.bootstrap, "group.id": f"count-{s.output}"})
    broker_before, redis_before = cpu_seconds(services.broker), cpu_seconds(services.redis)
    started = time.monotonic()
    proc = start(system, s)
    assert proc.pid is not None
    meter = TreeMeter(proc.pid)
    try:
        got, changed, first, cpu_to_first = 0, started, None, None
        while got < expect and time.monotonic() - changed < (stall_s if got else start_s):
            time.sleep(_POLL_S)
            meter.sample()
            if not proc.running:
                raise SystemExit(
                    f"{system.name} exited ({s.workdir / (s.output + '.log')}):\n{proc.log_tail()}"
                )
            now = output_count(consumer, s.output)
            if now != got:
                got, changed = now, time.monotonic()
                if first is None:
                    first, cpu_to_first = changed - started, meter.cpu_s
        wall = changed - started
        cpu = meter.cpu_s
        broker_cpu = cpu_seconds(services.broker) - broker_before
        redis_cpu = cpu_seconds(services.redis) - redis_before if system.uses_redis else 0.0
        time.sleep(_SETTLE_S)
        got = output_count(consumer, s.output)
        rss = meter.peak_rss_kb + (rss_kb(services.redis) if system.uses_redis else 0)
    finally:
        proc.stop(timeout_ms=15_000)
        consumer.close()
    return {
        "results": got,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu + redis_cpu, 3),
        "redis_cpu_s": round(redis_cpu, 3),
        "broker_cpu_s": round(broker_cpu, 3),
        "peak_rss_kb": rss,
        "first_result_s": None if first is None else round(first, 3),
        "cpu_to_first_s": None if cpu_to_first is None else round(cpu_to_first, 3),
        "late": reported_late(Path(s.workdir) / f"{s.output}.log"),
        "log": str(Path(s.workdir) / f"{s.output}.log"),
    }


def drop_topics(bootstrap: str, output: str) -> None:
    """Delete a run's output topic and the internal topics of the system that wrote it (Kafka
    Streams' changelogs and re-partition topics are named after its application id, which names the
    output): a full run writes gigabytes."""
    admin = Admin(bootstrap)
    doomed = [t for t in admin.topics() if t == output or t.startswith(f"peers-{output}-")]
    admin.delete_topics(doomed)
