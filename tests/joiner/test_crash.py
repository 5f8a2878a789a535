"""Exactly once under crashes: SIGKILL a worker at random moments, restart it, compare with the oracle.

A worker killed among others, whose partitions move to them and come back when it rejoins, is
tests/faults/test_scenarios.py's `test_sigkills_and_clean_restarts` (3 workers, kills with a batch
in flight, poison records)."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    ChunkedProducer,
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    register_query,
    run_scenario,
    wait_running,
)

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.integration]


def _compare(want: Counter[str], records: list[Any], logs: str) -> None:
    got = Counter(json.loads(r.value)["id"] for r in records)
    dups = sum(n - 1 for n in got.values() if n > 1)
    assert got == want, (
        f"missing {sum((want - got).values())}, extra {sum((got - want).values())}, duplicates {dups}\n{logs}"
    )


def test_single_worker_survives_repeated_sigkill(
    query_setup: Callable[[int], QuerySetup], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    s = query_setup(4)
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=1200, keys=40,
                      seed=11, lateness=2)  # fmt: skip
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix)
    rng = random.Random(5)
    kills = 0

    async def scenario() -> tuple[Counter[str], list[Any]]:
        nonlocal kills
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 4)
        producer = ChunkedProducer(kafka_broker, s.topics, w, chunks=12, pause_s=1.5)
        producer.start()
        while kills < 6:
            await asyncio.sleep(rng.uniform(0.3, 3.0))
            joiner.kill()
            kills += 1
            joiner.start()
        producer.join(timeout=120)
        assert producer.error is None and not producer.is_alive()
        want = expected_ids(w.query, producer.events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=120, quiet_s=4
        )
        return want, records

    (want, records), _ = run_scenario(joiner, scenario)
    assert kills >= 5 and sum(want.values()) > 500
    _compare(want, records, joiner.log_tail())
