"""Live joiner, archiver and back-fill over the same workload on the embedded broker (slow).

The live joiner (`streamjoin joiner`) and the archiver (`streamjoin archiver`) both read the produced
workload; the back-fill then writes the results of a range that cuts through windows into the *same*
output topic. Its records are told apart by the `sj-source: backfill` header and must be exactly the
live results of that range (same ids, same values), which are exactly the oracle's.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.joiner.harness import (
    JoinerProcess,
    consume_output,
    make_workload,
    produce,
    register_query,
    wait_running,
)

from streamjoin.archiver import ArchiveLayout
from streamjoin.backfill.job import BackfillJob
from streamjoin.backfill.sink import SinkSpec
from streamjoin.dev.process import ManagedProcess

from .workload import Oracle

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_backfill_equals_live_joiner(
    make_topic: Callable[..., str], kafka_broker: str, redis_server: str, spark: Any, tmp_path: Path
) -> None:
    u = uuid.uuid4().hex[:8]
    partitions = 2
    topics = {s: make_topic(f"e2e.{s}", partitions=partitions) for s in "abc"}
    output = make_topic("e2e.out", partitions=partitions)
    w = make_workload(name=f"q{u}", topics=topics, output=output, partitions=partitions, per_stream=300,
                      keys=16, seed=21)  # fmt: skip
    prefix = f"t{u}:"
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=f"joiner-{u}", prefix=prefix)
    archive = tmp_path / "archive"
    archiver = ManagedProcess(
        "archiver",
        [sys.executable, "-c", "from streamjoin.cli.main import main; main()", "archiver",
         "--bootstrap", kafka_broker, "--archive-url", str(archive), "--metrics-port", "0",
         "--flush-interval-ms", "200", *[a for t in topics.values() for a in ("--topic", t)]],
        log_path=tmp_path / "archiver.log",
    )  # fmt: skip

    async def live() -> tuple[list[Any], Any]:
        await register_query(redis_server, prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, prefix, w.query.name, partitions)
        events = produce(kafka_broker, topics, w.items)
        want = Oracle(w.query, events).ids()
        records = await consume_output(kafka_broker, output, want=sum(want.values()), timeout_s=90)
        return records, events

    archiver.start()
    try:
        records, events = asyncio.run(live())
        layout = ArchiveLayout(str(archive))
        deadline = time.monotonic() + 60
        while (
            sum(layout.resume_offsets(topics.values()).values()) < len(events) and time.monotonic() < deadline
        ):
            time.sleep(0.2)
    except Exception as exc:
        raise AssertionError(f"{exc}\n--- joiner log ---\n{joiner.log_tail()}") from exc
    finally:
        joiner.stop()
        archiver.stop()
    assert sum(layout.resume_offsets(topics.values()).values()) == len(events), archiver.log_tail()

    oracle = Oracle(w.query, events)
    live_values = {json.loads(r.value)["id"]: r.value for r in records}
    assert Counter(json.loads(r.value)["id"] for r in records) == oracle.ids(), "the live joiner is exact"
    horizon = max(e.ts for e in events if e.record["n"] > 0)  # before the far-future closing records
    start, end = horizon // 4 + 7, 3 * horizon // 4 + 3  # odd bounds: windows cut at both ends
    want = oracle.ids(start, end)
    assert sum(want.values()) > 100

    summary = BackfillJob(spark, w.query, start, end, str(archive)).write(
        SinkSpec("kafka", output, kafka_broker)
    )
    assert summary.results == sum(want.values())
    total = len(records) + summary.results
    everything = asyncio.run(consume_output(kafka_broker, output, want=total, timeout_s=60, quiet_s=1.0))
    backfilled = [r for r in everything if dict(r.headers).get("sj-source") == b"backfill"]
    assert len(everything) == total
    got = Counter(json.loads(r.value)["id"] for r in backfilled)
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    for r in backfilled:  # the same record, key, partition and id header as its live twin
        value = json.loads(r.value)
        assert r.value == live_values[value["id"]], (r.value, live_values[value["id"]])
        assert dict(r.headers)["id"].decode() == value["id"]
        assert r.key == json.dumps(value["tuples"]["a"]["k"]).encode()
        assert r.partition == value["tuples"]["a"]["k"] % partitions
