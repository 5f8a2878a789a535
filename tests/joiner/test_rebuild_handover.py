"""A state rebuilt after Redis was lost, then taken over by another operator before it ran a batch.

The path of the duplicates once seen in `test_lost_redis.py` (1 run in 5): the operator that rebuilt
the state stops right after its rebuild (its worker restarts every operator when the registry comes
back with a new epoch), and a new operator, with a new keeper, resumes from the rebuilt checkpoint.
What the lost state published after its marker must still not be published again: the new operator
finds it in the marker. Real broker and Redis, the output compared with the brute-force oracle.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import orjson
import pytest
import redis.asyncio as aioredis
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import consume_output, expected_ids, make_workload, produce

from streamjoin.joiner.health import Health
from streamjoin.joiner.operators.operator import OperatorConfig, OutputTopics, PartitionOperator
from streamjoin.joiner.publish.publisher import Publisher
from streamjoin.joiner.recovery.positions import Marker, PositionKeeper, PositionLog
from streamjoin.kafka import KafkaClients
from streamjoin.operator import OperatorFactory
from streamjoin.state.base import Checkpoint, CommitBatch, StateStore, Trim
from streamjoin.state.redis import RedisStateStore
from streamjoin.testing import Event

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.integration]

INCARNATION = "1700000000.0:1"
_T = TypeVar("_T")
CONFIG = OperatorConfig(stop_timeout_ms=2_000, idle_timeout_ms=600_000)
"""No input goes idle in the pauses of the test: an idle input moves the watermark, and records
arriving after it would be late (the oracle knows nothing of pauses)."""


class StopAfterRebuild:
    """The real store, except that every commit after the rebuild's (the one with entries and output
    starts) waits for ever: the operator that rebuilt never commits a batch of its own."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self.rebuilt = asyncio.Event()
        self.held = asyncio.Event()
        """Set once a commit after the rebuild's waits: the operator is in its batch loop."""

    async def claim(self, query: str, partition: int, owner: str, topics: Sequence[str]) -> Checkpoint:
        return await self._store.claim(query, partition, owner, topics)

    async def commit(self, query: str, partition: int, epoch: int, batch: CommitBatch) -> None:
        if self.rebuilt.is_set():
            self.held.set()
            await asyncio.Event().wait()
        await self._store.commit(query, partition, epoch, batch)
        if batch.added and batch.output_start:
            self.rebuilt.set()

    async def trim(self, query: str, partition: int, epoch: int, trims: Sequence[Trim]) -> None:
        await self._store.trim(query, partition, epoch, trims)

    async def check_owner(self, query: str, partition: int, epoch: int) -> None:
        await self._store.check_owner(query, partition, epoch)

    async def drop_query(self, query: str) -> int:
        return await self._store.drop_query(query)


async def _until(probe: Callable[[], Awaitable[_T | None]], what: str, timeout_s: float = 60) -> _T:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while (found := await probe()) is None:
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)
    return found


async def _crash(op: PartitionOperator) -> None:
    """End the operator as a SIGKILL would: no final marker, nothing flushed."""
    assert op._task is not None
    op._task.cancel()
    await asyncio.gather(op._task, return_exceptions=True)


async def _lose_redis(url: str, prefix: str) -> None:
    """Delete every key of `prefix`: what a Redis restarted empty holds of this test."""
    client = aioredis.Redis.from_url(url)
    try:
        keys = [k async for k in client.scan_iter(match=f"{prefix}*", count=1_000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


class _Run:
    """One query partition's operators on the real broker and Redis, one after another."""

    def __init__(
        self, s: QuerySetup, kafka_broker: str, redis_url: str, dead: str, positions: str, seed: int
    ) -> None:
        self.s, self.bootstrap, self.positions = s, kafka_broker, positions
        self.w = make_workload(name=s.name, topics=s.topics, output=s.output, partitions=1, per_stream=300,
                               keys=12, seed=seed, lateness=2)  # fmt: skip
        self.kafka = KafkaClients(kafka_broker)
        self.outputs = OutputTopics(s.output, 1, dead, 1, 1)
        self.store = RedisStateStore(redis_url, prefix=s.prefix)
        self.publisher = Publisher(self.kafka, client_id=f"w-{s.name}")
        self.log = PositionLog(self.kafka, prefix=s.prefix, topic=positions, cache_ms=0)

    def operator(self, on: StateStore, log: PositionLog) -> tuple[PartitionOperator, PositionKeeper]:
        keeper = log.keeper(self.s.name, 0, INCARNATION, on, self.outputs)
        op = PartitionOperator(
            OperatorFactory(self.w.query), 0, outputs=self.outputs, kafka=self.kafka, store=on,
            publisher=self.publisher, owner="w", health=Health(), config=CONFIG,
            on_status=lambda *_: None, positions=keeper,
        )  # fmt: skip
        op.start()
        return op, keeper

    async def published_past_a_marker(self) -> tuple[list[Event], Counter[str], Marker]:
        """Run operator A over every record, with a marker taken halfway (A's windows holding
        records) and none after it; crash A once the whole result is published."""
        a, keeper_a = self.operator(self.store, self.log)

        async def running() -> bool | None:
            return a.state == "running" or None

        async def marker_with_entries() -> Marker | None:
            found = await self.log.marker(self.s.name, 0)
            return found if found is not None and found.entries else None

        items, topics = self.w.items, self.s.topics
        half = len(items) // 2
        await _until(running, "the operator to position at the inputs' ends (`start`: latest)")
        events: list[Event] = await asyncio.to_thread(produce, self.bootstrap, topics, items[:half])
        marker = await _until(marker_with_entries, "a marker of windows holding records")
        keeper_a._interval = 3_600.0  # no later marker: what A publishes from now on is after it
        events += await asyncio.to_thread(produce, self.bootstrap, topics, items[half:])
        want = expected_ids(self.w.query, events)
        await consume_output(self.bootstrap, self.s.output, want=sum(want.values()), timeout_s=90, quiet_s=1)
        await _crash(a)
        return events, want, marker

    async def resumed_to_the_end(self, events: Sequence[Event]) -> list[Any]:
        """Run a new operator (a new keeper, as after a restart by the worker or on another worker)
        until it has read every input; return the whole output."""
        log = PositionLog(self.kafka, prefix=self.s.prefix, topic=self.positions)
        c, keeper_c = self.operator(self.store, log)
        ends = {self.s.topics[e.stream]: e.offset + 1 for e in events}  # events come in offset order

        async def caught_up() -> bool | None:
            return all(keeper_c._offsets.get(t, -1) >= o for t, o in ends.items()) or None

        try:
            await _until(caught_up, "the resumed operator to read every input")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; its last error: {c.error}") from None
        await c.stop()  # waits for its publishes
        await asyncio.to_thread(log.close)
        return await consume_output(self.bootstrap, self.s.output, want=0, timeout_s=30, quiet_s=2)

    async def close(self) -> None:
        await asyncio.to_thread(self.publisher.close, 2_000)
        await asyncio.to_thread(self.log.close)
        await self.store.aclose()


def _check(want: Counter[str], records: list[Any], marker: Marker) -> None:
    got = Counter(orjson.loads(r.value)["id"] for r in records)
    assert sum(want.values()) > 200
    assert marker.entries, "the marker held no state: nothing was rebuilt"
    after = [r for r in records if r.offset >= marker.outputs.get("results", 0)]
    assert len(after) > 50, "too little was published after the marker to test its skipping"
    assert got == want, f"extra {sum((got - want).values())}, missing {sum((want - got).values())}"


def test_an_operator_resuming_a_rebuilt_state_skips_what_was_published_after_the_marker(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    redis_server: str,
    make_topic: Callable[..., str],
) -> None:
    s = query_setup(1)
    run = _Run(s, kafka_broker, redis_server, make_topic("dead"), make_topic("positions"), seed=41)

    async def scenario() -> tuple[Counter[str], list[Any], Marker]:
        try:
            events, want, marker = await run.published_past_a_marker()
            await _lose_redis(redis_server, s.prefix)
            # B rebuilds from the marker, then stops before committing a batch of its own
            gate = StopAfterRebuild(run.store)
            b, _ = run.operator(gate, run.log)
            await asyncio.wait_for(gate.held.wait(), 90)
            await _crash(b)
            # C resumes from the rebuilt checkpoint
            return want, await run.resumed_to_the_end(events), marker
        finally:
            await run.close()

    _check(*asyncio.run(scenario()))


def test_a_checkpoint_that_lost_its_scalars_is_rebuilt_from_the_marker(
    query_setup: Callable[[int], QuerySetup],
    kafka_broker: str,
    redis_server: str,
    make_topic: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis keeps the operator's offsets, entries and outbox but its engine scalars are gone or `{}`
    (what a rebuild of a rolled-back state used to store when the checkpoint had none): the next
    operator must not resume from it (it failed on every attempt with `KeyError: 'next_seq'`) but
    release what it holds and rebuild from the marker; the output stays exactly once."""
    s = query_setup(1)
    run = _Run(s, kafka_broker, redis_server, make_topic("dead"), make_topic("positions"), seed=42)

    async def scenario() -> tuple[Counter[str], list[Any], Marker]:
        try:
            events, want, marker = await run.published_past_a_marker()
            client = aioredis.Redis.from_url(redis_server)
            try:
                await client.hset(run.store.keys(s.name, 0).meta, "scalars", "{}")
            finally:
                await client.aclose()
            return want, await run.resumed_to_the_end(events), marker
        finally:
            await run.close()

    _check(*asyncio.run(scenario()))
    assert "checkpoint unusable: its scalars lack next_seq" in caplog.text
    assert "rebuilt" in caplog.text and "KeyError" not in caplog.text
