"""The worker's periodic checks and statistics (moved out of `worker/worker.py` to keep it small)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from streamjoin.joiner.group.app import crashed_services
from streamjoin.joiner.group.watch import EXIT_GROUP_STALLED, broker_down, group_problem
from streamjoin.joiner.health import Health
from streamjoin.joiner.operators.operator import PartitionOperator
from streamjoin.joiner.operators.stats import window_stats
from streamjoin.kafka import Consumer, ConsumerError
from streamjoin.registry import RegistryStore
from streamjoin.state.redis import RedisStateStore

__all__ = ["EXIT_MISCONFIGURED", "check_faust", "probe_kafka", "publish_stats", "watch_faust"]

_log = logging.getLogger(__name__)
_KAFKA_PROBE_TIMEOUT_S = 2.0

EXIT_MISCONFIGURED = 78
"""A worker's exit status when its configuration or its Redis' is unsafe to run with (sysexits'
EX_CONFIG: starting it again changes nothing): a slot count that is not the slots topic's
(`worker.slots`), a Redis that may evict keys (`state.redis.eviction`)."""


def check_faust(app: Any, health: Health) -> None:
    """Not ready while Faust's conductor or consumer is crashed (it would never rebalance again), or
    while a rebalance has gone on far past the rebalance timeout (`group.watch`)."""
    crashed = crashed_services(app) if app is not None else []
    if crashed:
        health.fail("faust", "; ".join(crashed))
    else:
        health.ok("faust")
    health.set("group", group_problem(app) if app is not None else None)


async def watch_faust(
    app: Any, health: Health, leave: Callable[[int], None], *, interval_s: float = 1.0
) -> None:
    """Run `check_faust` every `interval_s`; once the group stalled (`group.watch`) while a broker
    answers, call `leave(EXIT_GROUP_STALLED)` and return. Start it before the app: the first join
    can stall too.

    While no broker answers ("kafka" or the probe failing) the worker waits, and the stall is
    measured again from when one answers: a new process would not join a group either.
    """
    while True:
        await asyncio.sleep(interval_s)
        if any("kafka" in component for component in health.problems()):
            broker_down(app)
        check_faust(app, health)
        stalled = health.problems().get("group")
        if stalled is None:
            continue
        _log.error("leaving the consumer group: %s; exiting with code %d to rejoin as a new member",
                   stalled, EXIT_GROUP_STALLED)  # fmt: skip
        leave(EXIT_GROUP_STALLED)
        return


async def probe_kafka(meta: Consumer) -> None:
    """Not ready while no broker answers a metadata request in time.

    A stopped or unreachable broker leaves the operators' fetches and the producer's deliveries
    waiting for their own timeouts (40 s and 5 min): nothing fails, nothing is lost, and nothing
    else would show that the worker is stuck.
    """
    try:
        async with asyncio.timeout(_KAFKA_PROBE_TIMEOUT_S):
            await meta.topics()
    except TimeoutError as exc:
        raise TimeoutError(f"no broker answered within {_KAFKA_PROBE_TIMEOUT_S:g} s") from exc
    except ConsumerError as exc:
        raise ConnectionError(f"broker: {exc}") from exc


async def publish_stats(
    store: RedisStateStore, registry: RegistryStore, ops: Sequence[tuple[tuple[str, int], PartitionOperator]]
) -> None:
    """Write every operator's statistics (`streamjoin:stats:{query}:{partition}`)."""
    # The shared window tables are the same for every query reading a topic: read each once.
    tables = await store.table_sizes({(p, i.topic) for (_, p), op in ops for i in op.query.inputs})
    for (q, p), op in ops:
        windows = window_stats(op.query, op.engine, {i.topic: tables[(p, i.topic)] for i in op.query.inputs})
        failing_since = op.error[1] if op.error is not None else None
        stats = replace(op.stats.snapshot(op.engine), failing_since=failing_since)
        await registry.write_stats(q, p, stats, windows)
