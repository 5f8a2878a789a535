"""The systems the peer benchmark runs, each a command over a workload directory and a way to read
its result count.

`replay` is the product as shipped (`streamjoin replay`, every result written to a file); `engine`
is the same loop counting results without writing them; `flink` and `spark` run their jobs in the
peers' virtual environment. Each run is a fresh process: start-up is part of the figures.
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
    """A run's result count and the peak RSS it reported itself (0: none)."""

    results: int
    peak_rss_kb: int = 0


class System(Protocol):
    """One system under test."""

    name: str
    label: str

    def argv(self, data: Path, peers_python: Path) -> list[str]:
        """Return the command that runs the workload in `data`."""
        ...

    def count(self, stdout: Path) -> Count:
        """Return the result count from the command's standard output."""
        ...


@dataclass(frozen=True)
class Replay:
    """`streamjoin replay QUERY EVENTS > file`: the results are counted as output lines."""

    name: str = "replay"
    label: str = "streamjoin replay (results written)"

    def argv(self, data: Path, peers_python: Path) -> list[str]:
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
    """A job module that prints one JSON line {"results": N[, "peak_rss_kb": K]} last."""

    name: str
    label: str
    module: str
    peers_venv: bool

    def argv(self, data: Path, peers_python: Path) -> list[str]:
        """Return `python -m MODULE DATA` with the right interpreter."""
        return [str(peers_python if self.peers_venv else sys.executable), "-m", self.module, str(data)]

    def count(self, stdout: Path) -> Count:
        """Read the job's last line."""
        lines = stdout.read_text().strip().splitlines()
        if not lines:
            raise ValueError("no output")
        last = json.loads(lines[-1])
        return Count(int(last["results"]), int(last.get("peak_rss_kb", 0)))


SYSTEMS: dict[str, System] = {
    s.name: s
    for s in (
        Replay(),
        CliJob("engine", "streamjoin engine (results counted)", "bench.peers.engine_count", False),
        CliJob("flink", "Flink 2.3 SQL, p1", "bench.peers.flink_job", True),
        CliJob("spark", "Spark 4.3 SS, local[2]", "bench.peers.spark_job", True),
    )
}
