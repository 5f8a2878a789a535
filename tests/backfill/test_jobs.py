"""The control plane's job runner (`BackfillJobs`) and the `streamjoin backfill` command.

These run a stand-in command that writes status files like the real one; the real command (its own
Spark driver) runs through `BackfillJobs` in tests/api/test_backfills.py, which checks its output
against the oracle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from streamjoin.backfill.jobs import BackfillJobs, JobNotFoundError
from streamjoin.dev.procscan import children, zombie

QUERY = {
    "name": "flows",
    "inputs": [
        {"stream": "a", "topic": "net.a", "timestamp": "ts", "window": {"range": 100}},
        {"stream": "b", "topic": "net.b", "timestamp": "ts", "window": {"rows": 50}},
    ],
    "where": [["a.src", "=", "b.src"]],
    "output": {"topic": "flows.out"},
}

STAND_IN = textwrap.dedent(
    """
    import json, os, sys, time
    args = sys.argv[1:]
    status = args[args.index("--status-file") + 1]
    def write(**fields):  # replaced atomically, as the real command does: a reader never sees it half written
        try:
            current = json.load(open(status))
        except Exception:
            current = {}
        current.update(fields)
        with open(status + ".tmp", "w") as tmp:
            json.dump(current, tmp)
        os.replace(status + ".tmp", status)
    mode = args[args.index("--from") + 1]
    write(state="running", progress=0.5, tasks_done=2, tasks_total=4)
    if mode == "1":
        write(state="succeeded", progress=1.0, summary={"results": 3})
    elif mode == "2":
        sys.exit(3)  # dies without a final status
    else:
        time.sleep(60)
    """
)


@pytest.fixture
def jobs(tmp_path: Path) -> BackfillJobs:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return BackfillJobs(tmp_path / "jobs", command=[sys.executable, str(script)])


def test_job_succeeds(jobs: BackfillJobs) -> None:
    started = jobs.start(QUERY, 1, 2)
    assert started.query == "flows" and started.state in {"starting", "running", "succeeded"}
    done = jobs.wait("flows", started.id, timeout_s=30)
    assert done.state == "succeeded" and done.progress == 1.0 and done.summary == {"results": 3}
    assert [j.id for j in jobs.list("flows")] == [started.id]
    assert jobs.list("other") == []


def test_job_that_dies_is_failed(jobs: BackfillJobs) -> None:
    started = jobs.start(QUERY, 2, 3)
    done = jobs.wait("flows", started.id, timeout_s=30)
    assert done.state == "failed" and done.error is not None


@pytest.mark.parametrize(("start", "state"), [(2, "failed"), (1, "succeeded")])
def test_a_finished_job_leaves_no_zombie(jobs: BackfillJobs, start: int, state: str) -> None:
    started = jobs.start(QUERY, start, start + 1)
    pid = json.loads((Path(jobs.root) / "flows" / started.id / "status.json").read_text())["pid"]
    deadline = time.monotonic() + 30
    while pid in children(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.1)  # nothing here asks about the job: only its own waiter reaps it
    assert not zombie(pid), f"job {started.id} (pid {pid}) is a zombie of this process"
    assert pid not in children(os.getpid())
    assert jobs.get("flows", started.id).state == state


def test_job_can_be_cancelled(jobs: BackfillJobs) -> None:
    started = jobs.start(QUERY, 5, 6)
    for _ in range(100):
        if jobs.get("flows", started.id).state == "running":
            break
        time.sleep(0.1)
    assert jobs.get("flows", started.id).progress == 0.5
    assert jobs.cancel("flows", started.id, timeout_s=5).state == "cancelled"
    with pytest.raises(JobNotFoundError):
        jobs.get("flows", "nope")
    with pytest.raises(JobNotFoundError):
        jobs.get("../flows", started.id)


def test_cli_rejects_bad_input_without_spark(tmp_path: Path) -> None:
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps({**QUERY, "inputs": QUERY["inputs"][:1]}))
    cli = [sys.executable, "-c", "from streamjoin.cli.main import main; main()", "backfill"]
    run = subprocess.run(
        [*cli, str(bad), "--from", "0", "--to", "10"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2 and "inputs" in run.stderr and run.stdout == ""
    good = tmp_path / "good.json"
    good.write_text(json.dumps(QUERY))
    run = subprocess.run(
        [*cli, str(good), "--from", "10", "--to", "5"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2 and "--to" in run.stderr
