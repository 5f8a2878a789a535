"""Driving `streamjoin dev up` as a user would: the command, and its output until it runs."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["MARKER", "STREAMJOIN", "output_until_running", "start_dev_up", "stop_dev_up"]

MARKER = "STREAMJOIN_TEST_MARKER"
"""An environment variable set to a fresh value per test, to find every process the test started."""
STREAMJOIN = Path(sys.executable).with_name("streamjoin")


def start_dev_up(*options: str, env: Mapping[str, str], cwd: Path) -> subprocess.Popen[str]:
    """Start `streamjoin dev up OPTIONS...`, its output (stdout and stderr) readable as text."""
    return subprocess.Popen(
        [str(STREAMJOIN), "dev", "up", *options],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def output_until_running(dev: subprocess.Popen[str]) -> str:
    """Return what `dev up` printed until its "Running." line (or its exit, if it never runs)."""
    assert dev.stdout is not None
    lines = []
    for line in dev.stdout:
        lines.append(line)
        if line.startswith("Running."):
            break
    return "".join(lines)


def stop_dev_up(dev: subprocess.Popen[str], *, timeout_s: float = 60) -> str:
    """Stop `dev up` as Ctrl-C does, unless it has exited; return the rest of its output.

    Killing it instead would leave its stack running: each service is in a process group of its own.
    It is killed only if it has not exited within `timeout_s`.
    """
    if dev.poll() is None:
        dev.send_signal(signal.SIGINT)
    try:
        rest, _ = dev.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        dev.kill()
        rest, _ = dev.communicate()
    return rest
