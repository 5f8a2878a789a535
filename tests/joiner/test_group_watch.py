"""A worker whose rebalance outlasts its stall bound is not ready ("group") and leaves the group by
exiting with `EXIT_GROUP_STALLED` (its supervisor starts it again), unless no broker answers."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from tests.joiner.harness import JoinerProcess

from streamjoin.joiner.group.app import make_app
from streamjoin.joiner.group.watch import _WATCHES, EXIT_GROUP_STALLED
from streamjoin.joiner.health import Health
from streamjoin.joiner.worker.checks import check_faust, watch_faust
from streamjoin.kafka import KafkaClients


def test_a_rebalance_without_assignment_past_its_bound_makes_the_worker_not_ready(tmp_path: Path) -> None:
    async def run() -> list[dict[str, str]]:
        app = make_app("g-test", KafkaClients("127.0.0.1:1"), datadir=str(tmp_path), session_timeout_ms=6_000)
        watch = _WATCHES[app]
        assert watch.bound_s == 3 * 6.0
        health, seen = Health(), []
        await app.on_partitions_assigned.send(set())  # the first join completed
        await app.on_partitions_revoked.send(set())  # a rebalance began (Faust's own signal)
        check_faust(app, health)
        seen.append(health.problems())
        watch._since = (watch._since or 0.0) - 19.0  # ... 19 s ago
        check_faust(app, health)
        seen.append(health.problems())
        await app.on_partitions_revoked.send(set())  # a second revocation does not restart the clock
        check_faust(app, health)
        seen.append(health.problems())
        await app.on_partitions_assigned.send(set())  # the join completed
        check_faust(app, health)
        seen.append(health.problems())
        return seen

    during, stuck, again, after = asyncio.run(run())
    assert during == {} and after == {}
    assert stuck == again
    assert stuck["group"].startswith("no partition assignment for 19 s after a rebalance began"), stuck


def _leaves(tmp_path: Path, *, broker_down: bool, assigned: bool, wait_s: float = 0.5) -> list[int]:
    """Run `watch_faust` for `wait_s` over an app whose consumer never joins (nothing listens at its
    broker address), with a 50 ms stall bound; return the exit codes it asked for."""

    async def run() -> list[int]:
        app = make_app("g-stall", KafkaClients("127.0.0.1:1"), datadir=str(tmp_path), group_stall_ms=50)
        if assigned:
            await app.on_partitions_assigned.send(set())
        health, codes = Health(), []
        if broker_down:
            health.fail("_probe_kafka", "TimeoutError: no broker answered within 2 s")
        task = asyncio.create_task(watch_faust(app, health, codes.append, interval_s=0.02))
        await asyncio.wait([task], timeout=wait_s)
        task.cancel()
        if codes:
            assert health.problems()["group"].startswith("no partition assignment for 0 s"), health.problems()
        return codes

    return asyncio.run(run())


def test_a_worker_never_assigned_leaves_the_group_with_its_exit_code(tmp_path: Path) -> None:
    assert _leaves(tmp_path, broker_down=False, assigned=False) == [EXIT_GROUP_STALLED]


def test_a_worker_holding_an_assignment_stays(tmp_path: Path) -> None:
    assert _leaves(tmp_path, broker_down=False, assigned=True) == []


def test_a_worker_waits_while_no_broker_answers(tmp_path: Path) -> None:
    """Rejoining cannot help while the broker is down: the worker is not ready, and stays."""
    assert _leaves(tmp_path, broker_down=True, assigned=False) == []


@pytest.mark.integration
def test_the_worker_process_exits_with_its_code_when_its_group_stalls(
    kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    """A real worker whose bound (1 ms) its first join outlasts logs why and exits 75 in time."""
    worker = JoinerProcess(tmp_path, kafka_broker, redis_server, group=f"g-{uuid.uuid4().hex[:8]}",
                           prefix=f"p{uuid.uuid4().hex[:8]}:", extra=["--group-stall-ms", "1"],
                           restart_on_stall=False)  # fmt: skip
    worker.start()
    try:
        process = worker.process
        assert process is not None
        deadline = time.monotonic() + 60
        while process.running and time.monotonic() < deadline:
            time.sleep(0.1)
        code = worker.stop()
    finally:
        worker.stop()
    log = worker.log_tail()
    assert code == EXIT_GROUP_STALLED, log
    assert "leaving the consumer group: no partition assignment for" in log, log
