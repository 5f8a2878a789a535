"""The stack, the fixtures and `streamjoin dev up` stop everything they start, whatever happens."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import httpx
import pytest
from tests.dev.devup import MARKER, STREAMJOIN, output_until_running, start_dev_up, stop_dev_up

from streamjoin.dev.process import ProcessExitedError
from streamjoin.dev.procscan import group_members, pid_alive, processes_with_env
from streamjoin.dev.redis_server import REDIS_BIN_ENV
from streamjoin.dev.stack import EmbeddedStack

pytestmark = pytest.mark.integration  # every test here starts a real stack (Kafka, Redis, the services)

# A test module run by a pytest subprocess: it records the stack's pids, then fails or hangs.
INNER_TEST = """
import json, os, time

def test_uses_the_stack(embedded_stack):
    pids = [s.process.pid for s in embedded_stack.services]
    with open(os.environ["PIDS_FILE"] + ".tmp", "w") as out:
        json.dump(pids, out)
    os.rename(os.environ["PIDS_FILE"] + ".tmp", os.environ["PIDS_FILE"])
    if os.environ.get("HANG"):
        time.sleep(600)
    assert False, "failing on purpose"
"""


def _marked_env(marker: str, **extra: str) -> dict[str, str]:
    return {**os.environ, MARKER: marker, **extra}


def _wait_for(path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear in {timeout_s} s"
        time.sleep(0.05)


def _inner_pytest(tmp_path: Path, marker: str, **extra: str) -> subprocess.Popen[str]:
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(textwrap.dedent(INNER_TEST))
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "streamjoin.dev.pytest_plugin",
        "-p",
        "no:cacheprovider",
    ]
    argv += ["--rootdir", str(tmp_path), "-c", os.devnull, str(test_file)]
    env = _marked_env(marker, PIDS_FILE=str(tmp_path / "pids.json"), **extra)
    return subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_stop_leaves_no_process_and_no_work_dir() -> None:
    with EmbeddedStack() as stack:
        pids = [s.process.pid for s in stack.services if s.process is not None and s.process.pid is not None]
        workdir = stack.workdir
        assert len(pids) == 2 and all(pid_alive(pid) for pid in pids)
        # every service the stack starts gets this run's registry key (docs/registry.md)
        assert stack.settings().as_env()["STREAMJOIN_REGISTRY_KEY"] == stack.registry_key
        assert len(stack.registry_key) == 64 and stack.registry_key != EmbeddedStack().registry_key
    assert not any(pid_alive(pid) for pid in pids)
    assert all(group_members(pid) == [] for pid in pids)
    assert not workdir.exists()


def test_a_service_failing_to_start_stops_the_ones_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REDIS_BIN_ENV, "/bin/false")
    stack = EmbeddedStack()
    with pytest.raises(ProcessExitedError, match="redis exited with code 1"):
        stack.start()
    broker = stack.broker.process
    assert broker is not None and broker.pid is not None and not pid_alive(broker.pid)
    assert (stack.workdir / "redis.log").exists()  # kept, to read the logs
    shutil.rmtree(stack.workdir)


@pytest.mark.timeout(360)
def test_a_failing_test_still_stops_the_stack(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    inner = _inner_pytest(tmp_path, marker)
    output, _ = inner.communicate(timeout=240)
    assert inner.returncode == 1, output
    assert "failing on purpose" in output
    pids = json.loads((tmp_path / "pids.json").read_text())
    assert not any(pid_alive(pid) for pid in pids)
    assert processes_with_env(MARKER, marker) == []


@pytest.mark.timeout(360)
def test_sigterm_to_pytest_still_stops_the_stack(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    inner = _inner_pytest(tmp_path, marker, HANG="1")
    try:
        _wait_for(tmp_path / "pids.json", timeout_s=180)
        inner.send_signal(signal.SIGTERM)
        output, _ = inner.communicate(timeout=120)
    finally:
        inner.kill()
    assert inner.returncode != 0, output
    assert processes_with_env(MARKER, marker) == []


@pytest.mark.timeout(180)
def test_dev_up_exit_after_check(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    done = subprocess.run(
        [
            str(STREAMJOIN),
            "dev",
            "up",
            "--exit-after-check",
            "--no-demo",
            "--workdir",
            str(tmp_path / "work"),
        ],
        env=_marked_env(marker, COLUMNS="80"),  # a terminal's width: the exports must not wrap
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for expected in ("round-trip a record through the broker", "Kafka bootstrap", "redis://127.0.0.1:"):
        assert expected in done.stdout
    # The whole stack without the demo workload: the API and a joiner run, nothing is registered.
    for expected in (
        "start the control plane",
        "start a joiner worker",
        "Control plane (REST)",
        "Joiner readiness",
    ):
        assert expected in done.stdout, done.stdout
    assert "demo" not in done.stdout.lower(), done.stdout
    assert "none left running" in done.stdout
    # Whole `export` lines to paste, the API token among them (a fresh one per run).
    exports = dict(
        line.removeprefix("export ").split("=", 1)
        for line in done.stdout.splitlines()
        if line.startswith("export STREAMJOIN_")
    )
    assert set(exports) == {"STREAMJOIN_KAFKA_BOOTSTRAP", "STREAMJOIN_REDIS_URL", "STREAMJOIN_API_TOKEN"}
    assert re.fullmatch(r"redis://127\.0\.0\.1:\d+/0", exports["STREAMJOIN_REDIS_URL"]), done.stdout
    assert re.fullmatch(r"127\.0\.0\.1:\d+", exports["STREAMJOIN_KAFKA_BOOTSTRAP"]), done.stdout
    assert len(exports["STREAMJOIN_API_TOKEN"]) >= 20, done.stdout
    assert processes_with_env(MARKER, marker) == []
    # The control plane keeps its back-fill jobs in the stack's data directory, not where it started.
    assert (tmp_path / "work" / "data" / "backfill-jobs").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


@pytest.mark.timeout(180)
def test_dev_up_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """SIGTERM, as compose or Kubernetes stop it (Ctrl-C's SIGINT ends the killed-joiner test below)."""
    marker = uuid.uuid4().hex
    dev = start_dev_up(env=_marked_env(marker, COLUMNS="200"), cwd=tmp_path)
    try:
        printed = output_until_running(dev)
        assert processes_with_env(MARKER, marker), printed
        dev.send_signal(signal.SIGTERM)
        rest, _ = dev.communicate(timeout=60)
    finally:
        stop_dev_up(dev)  # after a failure above: stops the stack too, as killing `dev up` would not
    assert dev.returncode == 0, printed + rest
    assert "none left running" in rest
    assert processes_with_env(MARKER, marker) == []


@pytest.mark.timeout(240)
def test_dev_up_starts_a_killed_joiner_again(tmp_path: Path) -> None:
    """A joiner that dies is started again on its port, as compose or Kubernetes would; the stack
    keeps running, and still stops cleanly."""
    marker = uuid.uuid4().hex
    dev = subprocess.Popen(
        [str(STREAMJOIN), "dev", "up", "--no-demo"],
        env=_marked_env(marker, COLUMNS="200"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert dev.stdout is not None
        lines = []
        for line in dev.stdout:
            lines.append(line)
            if line.startswith("Running."):
                break
        table = "".join(lines)
        found = re.search(r"Joiner readiness\s*│\s*(http://\S+/readyz)\s*│\s*(\d+)", table)
        assert found is not None, table
        ready_url, joiner_pid = found.group(1), int(found.group(2))
        os.kill(joiner_pid, signal.SIGKILL)
        for line in dev.stdout:
            lines.append(line)
            if "started it again" in line:
                break
        assert "joiner exited with code -9; started it again" in lines[-1], "".join(lines)
        assert httpx.get(ready_url, timeout=5).status_code == 200
        assert dev.poll() is None, "dev up stopped instead of restarting the joiner"
        dev.send_signal(signal.SIGINT)
        rest, _ = dev.communicate(timeout=60)
    finally:
        dev.kill()
    assert dev.returncode == 0, "".join(lines) + rest
    assert "none left running" in rest
    assert processes_with_env(MARKER, marker) == []
