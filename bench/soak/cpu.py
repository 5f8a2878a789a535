"""Where the soak's CPU goes: the broker's, Redis's and each worker's cores, minute by minute.

A thread reads `/proc` every `interval_s`: each process of the cluster by its command line (the
broker: Apache Kafka's JVM, main class `kafka.Kafka`, or the embedded `tansu`; `redis-server`; and
`streamjoin joiner --worker-id wN-...`) and its user + system CPU seconds. A process started again
(a killed worker) is a new pid; only the seconds of one pid count between two samples. The soak runs
alone on its machine, so no other such process is there to be mistaken for one of the cluster's.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict
from pathlib import Path

from bench.joiner_throughput_harness import cpu_seconds

__all__ = ["CpuSampler", "cores_by_minute"]

Sample = tuple[float, str, int, float]
"""(seconds since the sampler started, process name, pid, CPU seconds so far)."""


def _name(cmdline: list[str]) -> str | None:
    """Return the cluster's name for a process with this command line, or None if not one of it."""
    if not cmdline:
        return None
    if "tansu" in Path(cmdline[0]).name or (Path(cmdline[0]).name == "java" and "kafka.Kafka" in cmdline):
        return "broker"
    if "redis-server" in Path(cmdline[0]).name:
        return "redis"
    if "joiner" in cmdline and "--worker-id" in cmdline:
        return cmdline[cmdline.index("--worker-id") + 1].split("-")[0]
    return None


def _read() -> list[tuple[str, int, float]]:
    """Return (name, pid, CPU seconds) of every process of the cluster running now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            name = _name([part for part in cmdline if part])
            if name is None:
                continue
            found.append((name, int(entry.name), cpu_seconds(int(entry.name))))
        except OSError:  # it ended meanwhile
            continue
    return found


class CpuSampler:
    """Sample the cluster's CPU in a thread until `stop`."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self.samples: list[Sample] = []
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="soak-cpu", daemon=True)

    def start(self) -> None:
        """Start sampling (time 0 is now)."""
        self._began = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        """Take a last sample and stop."""
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while True:
            t = time.monotonic() - self._began
            self.samples += [(t, name, pid, cpu) for name, pid, cpu in _read()]
            if self._stop.wait(self._interval_s):
                return


def cores_by_minute(samples: list[Sample]) -> dict[str, list[float | None]]:
    """Return, per process name, the cores it used in each minute (None: no two samples of one pid)."""
    by_pid: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for t, name, pid, cpu in samples:
        by_pid[(name, pid)].append((t, cpu))
    minutes = int(max((t for t, *_ in samples), default=0.0) // 60) + 1
    used: dict[str, list[float]] = defaultdict(lambda: [0.0] * minutes)
    spans: dict[str, list[float]] = defaultdict(lambda: [0.0] * minutes)
    for (name, _), points in by_pid.items():
        for (t0, c0), (t1, c1) in itertools.pairwise(points):
            minute = int(t0 // 60)
            used[name][minute] += c1 - c0
            spans[name][minute] += t1 - t0
    return {
        name: [round(u / s, 2) if s > 0 else None for u, s in zip(used[name], spans[name], strict=True)]
        for name in sorted(used)
    }
