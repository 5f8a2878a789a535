"""The fault runner restarts a worker that exits on its own, as a supervisor would, but not one a
fault is stopping (`Cluster.supervise`, `Cluster.hold`), and a failed run tells whether a worker left a
stalled group (`ScenarioError.group_stalled`); the tests' own workers (`JoinerProcess`)
restart when they exit stalled, and only then."""

from __future__ import annotations

import time
from pathlib import Path

from bench.soak import ScenarioError
from bench.soak.cluster import Cluster
from tests.joiner.harness import JoinerProcess

from streamjoin.joiner.group.watch import EXIT_GROUP_STALLED


def _exiting_worker(tmp_path: Path, name: str) -> JoinerProcess:
    """A worker process that exits at once with `EXIT_GROUP_STALLED` (`sh -c` ignores the worker's argv)."""
    launcher = ["sh", "-c", f"exit {EXIT_GROUP_STALLED}", "--"]
    return JoinerProcess(tmp_path, "127.0.0.1:1", "redis://127.0.0.1:1", group="g", prefix="p:", name=name,
                         launcher=launcher, restart_on_stall=False)  # fmt: skip


def _wait_exited(worker: JoinerProcess) -> None:
    deadline = time.monotonic() + 10
    while worker.process is not None and worker.process.running and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_worker_that_exits_is_started_again_unless_a_fault_holds_it(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, workers=2, session_timeout_ms=6_000)
    free, held = _exiting_worker(tmp_path, "w1"), _exiting_worker(tmp_path, "w2")
    cluster.workers += [free, held]
    try:
        for worker in cluster.workers:
            worker.start()
            _wait_exited(worker)
        with cluster.hold(1):
            cluster.supervise()
        assert (free.starts, held.starts) == (2, 1)
        assert [(r["worker"], r["exit_code"]) for r in cluster.restarts] == [("w1", EXIT_GROUP_STALLED)]
        # what the CI scenario's one retry is decided on (the logs' words can be out of their tails)
        assert ScenarioError("not drained", cluster.restarts).group_stalled
        assert not ScenarioError("not drained", [{**cluster.restarts[0], "exit_code": -9}]).group_stalled
        _wait_exited(free)
        cluster.supervise()  # released: both exited workers start again
        assert (free.starts, held.starts) == (3, 2)
    finally:
        for worker in cluster.workers:
            worker.stop()


def test_a_test_worker_that_exits_stalled_is_started_again_until_the_test_stops_it(tmp_path: Path) -> None:
    stalled = JoinerProcess(tmp_path, "127.0.0.1:1", "redis://127.0.0.1:1", group="g", prefix="p:", name="s",
                            launcher=["sh", "-c", f"sleep 0.2; exit {EXIT_GROUP_STALLED}", "--"])  # fmt: skip
    failed = JoinerProcess(tmp_path, "127.0.0.1:1", "redis://127.0.0.1:1", group="g", prefix="p:", name="f",
                           launcher=["sh", "-c", "exit 1", "--"])  # fmt: skip
    stalled.start()
    failed.start()
    try:
        deadline = time.monotonic() + 10
        while stalled.stall_restarts < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stalled.stall_restarts >= 2 and stalled.starts == stalled.stall_restarts + 1
        _wait_exited(failed)
        time.sleep(0.3)
        assert (failed.starts, failed.stall_restarts) == (1, 0)  # any other exit is the test's to see
    finally:
        stalled.stop()
        failed.stop()
    starts = stalled.starts
    time.sleep(0.5)
    assert stalled.starts == starts  # stopped: never started again
