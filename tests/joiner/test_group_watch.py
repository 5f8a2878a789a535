"""A worker whose rebalance goes on far past the rebalance timeout is not ready ("group")."""

from __future__ import annotations

import asyncio
from pathlib import Path

from streamjoin.joiner.app import make_app
from streamjoin.joiner.group_watch import _WATCHES
from streamjoin.joiner.health import Health
from streamjoin.joiner.worker_checks import check_faust
from streamjoin.kafka import KafkaClients


def test_a_rebalance_without_assignment_past_its_bound_makes_the_worker_not_ready(tmp_path: Path) -> None:
    async def run() -> list[dict[str, str]]:
        app = make_app("g-test", KafkaClients("127.0.0.1:1"), datadir=str(tmp_path), session_timeout_ms=6_000)
        watch = _WATCHES[app]
        assert watch.bound_s == 60.0 + 2 * 6.0
        health, seen = Health(), []
        await app.on_partitions_revoked.send(set())  # a rebalance began (Faust's own signal)
        check_faust(app, health)
        seen.append(health.problems())
        watch._since = (watch._since or 0.0) - 73.0  # ... 73 s ago
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
    assert stuck["group"].startswith("no partition assignment for 73 s after a rebalance began"), stuck
