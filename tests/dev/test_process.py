"""A managed process starts in its own group, reports readiness or failure, and stops without leftovers."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from streamjoin.dev.process import ManagedProcess, ProcessExitedError, ReadinessTimeoutError
from streamjoin.dev.procscan import group_members, pid_alive

PARENT_WITH_CHILD = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(600)
"""

IGNORES_SIGTERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1], "w").write("ready")
time.sleep(600)
"""


def _python(tmp_path: Path, name: str, code: str, *args: str) -> ManagedProcess:
    return ManagedProcess(name, [sys.executable, "-c", code, *args], log_path=tmp_path / f"{name}.log")


def test_stop_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    proc = _python(tmp_path, "parent", PARENT_WITH_CHILD, str(marker))
    proc.start()
    proc.wait_ready(lambda: marker.exists() and marker.read_text() != "", timeout_ms=10_000)
    child = int(marker.read_text())
    assert proc.pid is not None
    assert set(group_members(proc.pid)) == {proc.pid, child}

    proc.stop(timeout_ms=5_000)

    assert not pid_alive(proc.pid)
    assert not pid_alive(child)
    assert group_members(proc.pid) == []
    assert not proc.running


def test_a_process_ignoring_sigterm_is_killed_after_the_bounded_wait(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    proc = _python(tmp_path, "stubborn", IGNORES_SIGTERM, str(marker))
    proc.start()
    proc.wait_ready(marker.exists, timeout_ms=10_000)

    started = time.monotonic()
    returncode = proc.stop(timeout_ms=300)

    assert returncode == -9
    assert time.monotonic() - started < 3
    assert proc.pid is not None and not pid_alive(proc.pid)


def test_a_stopped_process_is_terminated_not_killed(tmp_path: Path) -> None:
    """A process paused with SIGSTOP (as the fault tests pause Redis or the broker) still gets its
    SIGTERM: it is continued, exits on SIGTERM, and the wait is not spent."""
    proc = _python(tmp_path, "paused", "import time; time.sleep(600)")
    proc.start()
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGSTOP)

    started = time.monotonic()
    returncode = proc.stop(timeout_ms=5_000)

    assert returncode == -signal.SIGTERM
    assert time.monotonic() - started < 3


def test_exit_before_ready_raises_with_the_log(tmp_path: Path) -> None:
    proc = _python(tmp_path, "crasher", "import sys; print('boom: port taken'); sys.exit(3)")
    proc.start()
    with pytest.raises(ProcessExitedError, match="boom: port taken") as info:
        proc.wait_ready(lambda: False, timeout_ms=10_000)
    assert info.value.returncode == 3


def test_readiness_timeout_stops_the_process(tmp_path: Path) -> None:
    proc = _python(tmp_path, "silent", "import time; time.sleep(600)")
    proc.start()
    with pytest.raises(ReadinessTimeoutError, match="not ready after 200 ms"):
        proc.wait_ready(lambda: False, timeout_ms=200)
    assert proc.pid is not None and not pid_alive(proc.pid)


def test_stop_is_idempotent_and_safe_before_start(tmp_path: Path) -> None:
    proc = _python(tmp_path, "sleeper", "import time; time.sleep(600)")
    assert proc.stop() is None
    proc.start()
    assert proc.stop(timeout_ms=5_000) == -15
    assert proc.stop(timeout_ms=5_000) == -15
