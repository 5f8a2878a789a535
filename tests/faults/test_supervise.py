"""The fault runner restarts a worker that exits on its own, as a supervisor would, but not one a
fault is stopping (`Cluster.supervise`, `Cluster.hold`)."""

from __future__ import annotations

import time
from pathlib import Path

from bench.soak.cluster import Cluster
from tests.joiner.harness import JoinerProcess

from streamjoin.joiner.group_watch import EXIT_GROUP_STALLED


def _exiting_worker(tmp_path: Path, name: str) -> JoinerProcess:
    """A worker process that exits at once with `EXIT_GROUP_STALLED` (`sh -c` ignores the worker's argv)."""
    launcher = ["sh", "-c", f"exit {EXIT_GROUP_STALLED}", "--"]
    return JoinerProcess(tmp_path, "127.0.0.1:1", "redis://127.0.0.1:1", group="g", prefix="p:", name=name,
                         launcher=launcher)  # fmt: skip


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
        _wait_exited(free)
        cluster.supervise()  # released: both exited workers start again
        assert (free.starts, held.starts) == (3, 2)
    finally:
        for worker in cluster.workers:
            worker.stop()
