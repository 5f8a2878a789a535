"""What the peers' jobs share: the result line, and reaping their JVM so its CPU is counted.

Standard library only (runs in the peers' virtual environment). A job ends by calling `finish`:
it reads the peak RSS of itself and its child processes (the JVM), stops the session, ends the
JVM (SIGTERM: its work is done; a gateway JVM would otherwise wait for its Python parent) and
waits for it, so the JVM's CPU time reaches the benchmark through `wait4` of the job.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["finish", "kafka_job_parser"]


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reap(pid: int, kill_after_s: float) -> None:
    deadline = time.monotonic() + kill_after_s
    try:
        os.kill(pid, signal.SIGTERM)
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
    except (ChildProcessError, ProcessLookupError):  # already gone (reaped by the library)
        pass


def finish(results: int, stop: Callable[[], None], kill_after_s: float = 10) -> None:
    """Stop the session with `stop`, reap the JVM, print the result line and exit at once (the
    libraries' exit handlers would talk to the JVM that is gone)."""
    jvms = _children(os.getpid())
    rss_kb = _hwm_kb(os.getpid()) + sum(_hwm_kb(p) for p in jvms)
    stop()
    for pid in jvms:
        _reap(pid, kill_after_s)
    print(json.dumps({"results": results, "peak_rss_kb": rss_kb}), flush=True)
    sys.stderr.flush()
    os._exit(0)


def kafka_job_parser(description: str) -> argparse.ArgumentParser:
    """Return the parser of a Kafka-mode job: the workload folder, the broker, the input topics
    (`{"stream": "topic", ...}`), the output topic and the connector's jars (comma-separated)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topics", required=True, type=json.loads, help='{"stream": "topic", ...}')
    parser.add_argument("--output", required=True)
    parser.add_argument("--jars", required=True, help="the Kafka connector's jars, comma-separated")
    return parser
