"""Redis SIGKILLed mid-run and restarted empty or from an old copy of its data, or flushed under the
running worker: the output stays exactly once. (Restarted with its data, which needs no rebuild: the
freezes scenario of tests/faults.)

The registry comes back from its log (as the control plane's guard does it); the worker holds its
queries meanwhile, its operators are fenced (their `meta` is gone), re-claim, find their progress
marker in `streamjoin.positions` and rebuild their windows from the input topics; results
published after the marker are not published again. Compared with the brute-force oracle: 0 lost,
0 duplicated, 0 extra.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    ChunkedProducer,
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    run_scenario,
    wait_running,
)
from tests.registry.redis_process import RestartableRedis

from streamjoin.kafka import KafkaClients
from streamjoin.query import parse_query
from streamjoin.registry import QueryRecord, RegistryStore, StreamRecord
from streamjoin.registry.durable import KafkaRegistryLog

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow, pytest.mark.integration]

_REBUILT = re.compile(
    r"rebuilt (\d+) entries .* in ([0-9.]+) s \((\d+) input records re-read\); (\d+) records"
)


async def _register(store: RegistryStore, query_json: dict[str, Any]) -> None:
    """Register the streams and the query through a store with a log, as the control plane does."""
    streams = []
    for inp in query_json["inputs"]:
        record = StreamRecord(name=inp["stream"], topic=inp["topic"], timestamp=inp["timestamp"])
        await store.create_stream(record)
        streams.append(record)
    await store.create_query(QueryRecord.of(parse_query(query_json), at=time.time()), streams=streams)


def _run(
    s: QuerySetup,
    kafka_broker: str,
    redis: RestartableRedis,
    tmp_path: Path,
    *,
    loss: str,
    seed: int,
    rekeyed: bool = False,
) -> tuple[Counter[str], list[Any], float, str]:
    w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=4, per_stream=900, keys=40,
                      seed=seed, lateness=2)  # fmt: skip
    if rekeyed:  # no input declares its key: every one is re-keyed through an internal topic
        for inp, window in zip(w.query_json["inputs"], (300, 50, 40), strict=True):
            del inp["key"]  # (range windows only: a rows window counts per internal partition,
            inp["window"] = {"range": window}  # which the oracle does not model; an idle timeout of 3 s)
    joiner = JoinerProcess(tmp_path, kafka_broker, redis.url, group=s.group, prefix=s.prefix)

    async def scenario() -> tuple[Counter[str], list[Any], float]:
        log = KafkaRegistryLog(KafkaClients(kafka_broker))
        async with RegistryStore(redis.url, prefix=s.prefix, log=log) as store:
            await store.restore()  # what the control plane does at start-up: a new registry
            await _register(store, w.query_json)
        joiner.start()
        await wait_running(redis.url, s.prefix, s.name, 4)
        # small chunks close together: results keep being published between markers (1 s apart)
        producer = ChunkedProducer(kafka_broker, s.topics, w, chunks=40, pause_s=0.35)
        producer.start()
        await asyncio.sleep(4)
        snapshot = tmp_path / "snapshot"
        shutil.copytree(redis.data, snapshot)  # what an old RDB snapshot (or a lost fsync) brings back
        await asyncio.sleep(3)  # markers written, windows full, records still arriving
        if loss == "flushall":  # wiped under the running worker, its connections left open, and
            await _flushall(redis.url)  # the registry restored only 5 s later (no control plane
            await asyncio.sleep(5)  # meanwhile): the operators are fenced and rebuild before it
        else:
            redis.crash()
            redis.wipe()
            if loss == "rolled back":
                shutil.copytree(snapshot, redis.data)
            redis.start()
        lost_at = time.monotonic()
        async with RegistryStore(redis.url, prefix=s.prefix, log=log) as store:
            restored = await store.restore(check_log=True)  # what the control plane's guard does
        assert (restored is not None) == (loss in ("empty", "flushall"))
        await wait_running(redis.url, s.prefix, s.name, 4, timeout_s=60)
        recovered = time.monotonic() - lost_at
        producer.join(timeout=120)
        assert producer.error is None and not producer.is_alive()
        want = expected_ids(w.query, producer.events)
        records = await consume_output(
            kafka_broker, s.output, want=sum(want.values()), timeout_s=240, quiet_s=4
        )
        log.close()
        return want, records, recovered

    (want, records, recovered), _ = run_scenario(joiner, scenario)
    return want, records, recovered, joiner.log_path.read_text(errors="replace")


async def _flushall(url: str) -> None:
    """Delete every key of Redis, as an operator's `FLUSHALL` does (the server keeps running)."""
    client = Redis.from_url(url)
    try:
        await client.flushall()
    finally:
        await client.aclose()


def _report(logs: str, recovered: float) -> list[tuple[str, ...]]:
    """Print the figures of the rebuilds in `logs`; return them (entries, seconds, re-read, skipped)."""
    rebuilds = [m.groups() for m in _REBUILT.finditer(logs)]
    if rebuilds:
        print(
            f"\nrecovered in {recovered:.1f} s (all partitions running); {len(rebuilds)} rebuilds, "
            f"slowest {max(float(r[1]) for r in rebuilds):.2f} s; {sum(int(r[0]) for r in rebuilds)} "
            f"entries from {sum(int(r[2]) for r in rebuilds)} input records re-read; "
            f"{sum(int(r[3]) for r in rebuilds)} records published after the markers skipped"
        )
    return rebuilds


def _compare(want: Counter[str], records: list[Any], logs: str) -> None:
    got = Counter(json.loads(r.value)["id"] for r in records)
    dups = sum(n - 1 for n in got.values() if n > 1)
    missing = sorted((want - got).elements())[:10]
    assert got == want, (
        f"missing {sum((want - got).values())} (e.g. {missing}), extra {sum((got - want).values())}, "
        f"duplicates {dups}\n{logs}"
    )


def test_redis_restarted_empty_mid_run_is_rebuilt_exactly_once(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    restartable_redis: RestartableRedis,
    tmp_path: Path,
) -> None:
    s = query_setup(4)
    want, records, recovered, logs = _run(s, kafka_broker, restartable_redis, tmp_path, loss="empty", seed=21)
    assert sum(want.values()) > 500
    _compare(want, records, logs)
    rebuilds = _report(logs, recovered)
    assert len(rebuilds) >= 4, logs  # every partition rebuilt from its marker, none taken for new


def test_redis_restarted_empty_under_a_rekeyed_query_is_rebuilt_exactly_once(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    restartable_redis: RestartableRedis,
    tmp_path: Path,
) -> None:
    """The operators read internal topics: their entries come back from the source partitions the
    marker names, their duplicate filter from the marker; the repartitioners, whose positions Redis
    lost too, resume at their marks (never at `start`)."""
    s = query_setup(4)
    want, records, recovered, logs = _run(
        s, kafka_broker, restartable_redis, tmp_path, loss="empty", seed=24, rekeyed=True
    )
    assert sum(want.values()) > 500
    _compare(want, records, logs)
    assert len(_report(logs, recovered)) >= 4, logs
    assert len(re.findall(r"no position in Redis; resuming at the marked offset", logs)) >= 12, logs


def test_redis_flushed_under_a_running_worker_is_rebuilt_exactly_once(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    restartable_redis: RestartableRedis,
    tmp_path: Path,
) -> None:
    """`FLUSHALL` while the worker keeps its connections, the registry restored 5 s later: the
    operators' next commits are fenced (their `meta` is gone), so they stop; the worker starts them
    again while it holds its queries, they rebuild from their markers, and resume once more when the
    registry comes back with a new epoch. No attempt fails, and the output is exactly once."""
    s = query_setup(4)
    want, records, recovered, logs = _run(
        s, kafka_broker, restartable_redis, tmp_path, loss="flushall", seed=25
    )
    assert sum(want.values()) > 500
    _compare(want, records, logs)
    assert len(_report(logs, recovered)) >= 4, logs
    assert re.search(r"operator \S+: another worker owns it now \(FENCED", logs), "no commit was fenced"
    assert "Traceback" not in logs and "retrying in" not in logs, logs


def test_redis_rolled_back_mid_run_is_rebuilt_exactly_once(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    restartable_redis: RestartableRedis,
    tmp_path: Path,
) -> None:
    s = query_setup(4)
    want, records, recovered, logs = _run(
        s, kafka_broker, restartable_redis, tmp_path, loss="rolled back", seed=23
    )
    assert sum(want.values()) > 500
    _compare(want, records, logs)
    rolled = re.findall(r"state rolled back: inputs", logs)
    assert rolled, "the operators took an old checkpoint for a current one"
    assert _report(logs, recovered)  # (an attempt that fails mid-rebuild detects it again)
