"""Run one command and measure it: wall seconds, CPU seconds of the process and of every child it
waited for (`os.wait4`), and peak RSS.

The peers' jobs reap their JVM before they exit (jobutil.py), so the JVM's CPU is in `wait4`'s
figure; the peak RSS a job reports (its own plus its JVM's high-water marks) replaces `wait4`'s,
which is the largest single process only.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Measured", "run"]


@dataclass(frozen=True)
class Measured:
    """What one run cost."""

    wall_s: float
    cpu_s: float
    peak_rss_kb: int
    returncode: int


def run(argv: Sequence[str], *, stdout: Path, stderr: Path, env: Mapping[str, str] | None = None) -> Measured:
    """Run `argv` with stdout and stderr into files; return its wall, CPU and peak RSS."""
    with stdout.open("wb") as out, stderr.open("wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, env=dict(env) if env else None)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
    return Measured(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_kb=usage.ru_maxrss,
        returncode=proc.returncode,
    )
