"""The archiver service against the real embedded broker: crashes lose and duplicate nothing.

Records are produced continuously while `streamjoin archiver` runs as a subprocess; it is SIGKILLed
several times at random moments (mid-fetch, mid-write) and restarted, then stopped with SIGTERM
once its lag metric reads 0. Every produced (topic, partition, offset) must be in the archive exactly
once, with its value and Kafka timestamp.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from streamjoin.archiver import ArchiveLayout
from streamjoin.dev.ports import free_port
from streamjoin.dev.process import ManagedProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOTAL = 60_000


class Archiver:
    """A `streamjoin archiver` subprocess."""

    def __init__(
        self, workdir: Path, bootstrap: str, topics: list[str], archive: Path, metrics_port: int
    ) -> None:
        self.argv = [
            sys.executable, "-c", "from streamjoin.cli.main import main; main()", "archiver",
            "--bootstrap", bootstrap, "--archive-url", str(archive), "--metrics-port", str(metrics_port),
            "--flush-records", "2000", "--flush-interval-ms", "150",
            *[arg for t in topics for arg in ("--topic", t)],
        ]  # fmt: skip
        self.log = workdir / "archiver.log"
        self.process: ManagedProcess | None = None

    def start(self) -> None:
        self.process = ManagedProcess("archiver", self.argv, log_path=self.log)
        self.process.start()

    def kill(self) -> None:
        assert self.process is not None and self.process.pid is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.stop(timeout_ms=2_000)

    def stop(self) -> tuple[int | None, float]:
        assert self.process is not None
        started = time.monotonic()
        code = self.process.stop(timeout_ms=10_000)
        return code, time.monotonic() - started

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:]) if self.log.exists() else ""


def produce_slowly(bootstrap: str, topics: list[str], produced: dict[tuple[str, int, int], tuple[bytes, int]],
                   done: threading.Event) -> None:  # fmt: skip
    """Produce TOTAL records over a few seconds, recording each delivered (topic, partition, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    rng = random.Random(3)

    def report(err: object, msg: object) -> None:
        assert err is None, err
        produced[(msg.topic(), msg.partition(), msg.offset())] = (msg.value(), msg.timestamp()[1])  # type: ignore[attr-defined]

    try:
        for i in range(TOTAL):
            topic = topics[i % len(topics)]
            value = json.dumps({"ts": i, "k": rng.randrange(100), "pad": "x" * rng.randrange(50)}).encode()
            while True:
                try:
                    producer.produce(topic, value, partition=i % 2, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 2_000 == 0:
                producer.poll(0)
                time.sleep(0.1)  # about 20k records/s: the archiver is always mid-stream when killed
        assert producer.flush(30) == 0
    finally:
        done.set()


def metric(port: int, name: str) -> dict[str, float]:
    """Return the samples of one metric, by their label text."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(name):
            labels, _, value = line.rpartition(" ")
            samples[labels] = float(value)
    return samples


def test_crashes_lose_and_duplicate_nothing(
    make_topic: Callable[..., str], kafka_broker: str, tmp_path: Path
) -> None:
    topics = [make_topic("arch.a", partitions=2), make_topic("arch.b", partitions=2)]
    archive = tmp_path / "archive"
    port = free_port()
    archiver = Archiver(tmp_path, kafka_broker, topics, archive, port)
    layout = ArchiveLayout(str(archive))
    produced: dict[tuple[str, int, int], tuple[bytes, int]] = {}
    done = threading.Event()
    producer = threading.Thread(
        target=produce_slowly, args=(kafka_broker, topics, produced, done), daemon=True
    )
    producer.start()
    rng = random.Random(7)
    kills = 0
    try:
        while not done.is_set() or kills < 3:
            archiver.start()
            before = len(list(layout.files(topics)))
            deadline = time.monotonic() + 30
            while len(list(layout.files(topics))) <= before and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 0.4))
            archiver.kill()
            kills += 1
        producer.join(60)
        archiver.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                lag = metric(port, "streamjoin_archiver_lag_records{")
                archived = sum(layout.resume_offsets(topics).values())
            except OSError:
                time.sleep(0.2)
                continue
            if len(lag) == 4 and not any(lag.values()) and archived == len(produced):
                break
            time.sleep(0.2)
        code, seconds = archiver.stop()
    except BaseException:
        print(archiver.tail())
        raise
    assert code == 0 and seconds < 10, f"SIGTERM: exit code {code} after {seconds:.1f} s\n{archiver.tail()}"
    assert len(produced) == TOTAL and kills >= 3
    files = sorted(layout.files(topics))
    table = pq.read_table([layout.path(f) for f in files], partitioning=None)
    keys = list(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                    table.column("offset").to_pylist(), strict=True))  # fmt: skip
    counts = Counter(keys)
    duplicated = [k for k, n in counts.items() if n > 1]
    assert not duplicated, f"{len(duplicated)} records archived twice, e.g. {duplicated[:3]}"
    assert set(counts) == set(produced), f"missing {len(set(produced) - set(counts))}"
    values = dict(zip(keys, zip(table.column("value").to_pylist(), table.column("timestamp").to_pylist(),
                                strict=True), strict=True))  # fmt: skip
    assert values == produced
    for f in files:  # every file holds exactly the offsets its name says, in order
        assert f.first <= f.last
    assert layout.temporary_files(topics) == []
