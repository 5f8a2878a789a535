"""The systems the peer benchmark runs, each a command over a workload directory and a way to read
its result count.

`replay` is the product as shipped (`streamjoin replay`, every result written to a file); `engine`
is the same loop counting results without writing them; `flink` and `spark` run their jobs in the
peers' virtual environment. Each run is a fresh process: start-up is part of the figures, except
for `joiner` (the joiner through the embedded broker and Redis), which reports the span from the
query running to its last result, and the CPU of the worker, broker and Redis over it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["SYSTEMS", "Count", "CliJob", "Replay", "System"]

_MAIN = "from streamjoin.cli.main import main; main()"


@dataclass(frozen=True)
class Count:
    """A run's result count, and the figures it reported itself (0 / None: measure the process)."""

    results: int
    peak_rss_kb: int = 0
    wall_s: float | None = None
    cpu_s: float | None = None


class System(Protocol):
    """One system under test."""

    @property
    def name(self) -> str:
        """The name on the command line (`--systems`)."""
        ...

    @property
    def label(self) -> str:
        """The name in the table."""
        ...

    def argv(self, data: Path, peers_python: Path, expect: int) -> list[str]:
        """Return the command that runs the workload in `data` (`expect`: the reference count)."""
        ...

    def count(self, stdout: Path) -> Count:
        """Return the result count from the command's standard output."""
        ...


@dataclass(frozen=True)
class Replay:
    """`streamjoin replay QUERY EVENTS > file`: the results are counted as output lines."""

    name: str = "replay"
    label: str = "streamjoin replay (results written)"

    def argv(self, data: Path, peers_python: Path, expect: int) -> list[str]:
        """Return the replay command."""
        return [sys.executable, "-c", _MAIN, "replay", str(data / "query.json"), str(data / "events.jsonl")]

    def count(self, stdout: Path) -> Count:
        """Count the output lines (in blocks: the file may hold millions)."""
        lines = 0
        with stdout.open("rb") as f:
            while block := f.read(1 << 20):
                lines += block.count(b"\n")
        return Count(lines)


@dataclass(frozen=True)
class CliJob:
    """A job module that prints one JSON line {"results": N[, "peak_rss_kb": K, "wall_s": W,
    "cpu_s": C]} last."""

    name: str
    label: str
    module: str
    peers_venv: bool = False
    needs_expect: bool = False

    def argv(self, data: Path, peers_python: Path, expect: int) -> list[str]:
        """Return `python -m MODULE DATA` with the right interpreter."""
        python = peers_python if self.peers_venv else Path(sys.executable)
        return [
            str(python),
            "-m",
            self.module,
            str(data),
            *(["--expect", str(expect)] if self.needs_expect else []),
        ]

    def count(self, stdout: Path) -> Count:
        """Read the job's last line."""
        lines = stdout.read_text().strip().splitlines()
        if not lines:
            raise ValueError("no output")
        last = json.loads(lines[-1])
        return Count(
            int(last["results"]), int(last.get("peak_rss_kb", 0)), last.get("wall_s"), last.get("cpu_s")
        )


SYSTEMS: dict[str, System] = {
    s.name: s
    for s in (
        Replay(),
        CliJob("engine", "streamjoin engine (results counted)", "bench.peers.engine_count"),
        CliJob(
            "joiner",
            "streamjoin joiner, 1 worker (broker + Redis)",
            "bench.peers.joiner_job",
            needs_expect=True,
        ),
        CliJob("flink", "Flink 2.2 SQL, p1", "bench.peers.flink_job", peers_venv=True),
        CliJob("spark", "Spark 4.2 SS, local[2]", "bench.peers.spark_job", peers_venv=True),
    )
}
