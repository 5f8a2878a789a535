"""The batch loop reads the next batch while a commit is in flight, and still publishes a batch's
records only after its commit succeeded (batch_loop.py; the real broker and Redis: test_crash.py)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, cast

from tests.kafka_records import ConsumerRecord, TopicPartition, consumer_record

from streamjoin.joiner.batch.builder import BatchBuilder
from streamjoin.joiner.operators.batch_loop import BatchLoop
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.operators.hold import Hold
from streamjoin.joiner.operators.stats import OperatorCounters
from streamjoin.joiner.publish.outbox import OutboxRecord
from streamjoin.joiner.publish.output_topics import OutputTopics
from streamjoin.operator import OperatorFactory
from streamjoin.query import parse_query
from streamjoin.state.base import CommitBatch, OutboxState, StateUnavailableError

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [{"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 5}} for s in "ab"],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)
PER_TOPIC = 40  # records per input; a batch takes 2 of each (max_batch 4)


@dataclass
class _Consumer:
    """The records of t.a[0] and t.b[0] (key i, ts i: a[i] joins b[i]), handed out in order."""

    tps: list[TopicPartition] = field(
        default_factory=lambda: [TopicPartition("t.a", 0), TopicPartition("t.b", 0)]
    )
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    fetches: int = 0
    per_call: int = PER_TOPIC  # at most this many records of a partition per `getmany`

    def assignment(self) -> set[TopicPartition]:
        return set(self.tps)

    def highwater(self, tp: TopicPartition) -> int:
        return PER_TOPIC

    async def getmany(
        self, *tps: TopicPartition, timeout_ms: int = 0, max_records: int = 1
    ) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
        self.fetches += 1
        out: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = {}
        for tp in tps:
            start = self.positions.get(tp, 0)
            end = min(start + max_records, start + self.per_call, PER_TOPIC)
            if end > start:
                out[tp] = [
                    consumer_record(tp.topic, 0, i, json.dumps({"ts": i, "k": i}).encode(), timestamp=i)
                    for i in range(start, end)
                ]
                self.positions[tp] = end
        if not out:
            await asyncio.sleep(timeout_ms / 1000)
        return out


@dataclass
class _Store:
    """Commits after yielding a few times (a Redis round trip); counts the fetches made meanwhile."""

    consumer: _Consumer
    stopping: asyncio.Event
    fail_batch: int | None = None
    stop_after: int = 3
    committed: list[CommitBatch] = field(default_factory=list)
    fetched_during_commit: list[int] = field(default_factory=list)

    async def commit(self, query: str, partition: int, epoch: int, batch: CommitBatch) -> None:
        before = self.consumer.fetches
        for _ in range(5):
            await asyncio.sleep(0)
        self.fetched_during_commit.append(self.consumer.fetches - before)
        if batch.batch == self.fail_batch:
            raise StateUnavailableError("Redis unavailable: test")
        self.committed.append(batch)
        if len(self.committed) == self.stop_after:
            self.stopping.set()

    async def check_owner(self, query: str, partition: int, epoch: int) -> None:
        return None

    async def trim(self, query: str, partition: int, epoch: int, trims: Any) -> None:
        return None


@dataclass
class _Publisher:
    store: _Store
    published: list[tuple[int, list[OutboxRecord]]] = field(default_factory=list)

    async def publish(
        self, topic: str, partition: int, first_seq: int, records: list[OutboxRecord], **_: Any
    ) -> int:
        # what is published must be committed already: its sequence numbers end in a committed outbox
        committed = sum(len(c.outbox["results"]) for c in self.store.committed)
        assert first_seq + len(records) - 1 <= committed
        self.published.append((first_seq, records))
        return len(self.published)


_Outcome = tuple[_Store, _Publisher, BatchLoop, BaseException | None, int]


def _loop(store: _Store, publisher: _Publisher, hold: Hold) -> BatchLoop:
    return BatchLoop(
        "operator q[0]",
        0,
        builder=BatchBuilder(QUERY, 0, "dead"),
        store=cast(Any, store),
        publisher=cast(Any, publisher),
        outputs=OutputTopics("out", 1, "dead", 1, 1),
        config=OperatorConfig(max_batch=4, poll_ms=1),
        stats=OperatorCounters(QUERY),
        positions=None,
        stopping=store.stopping,
        hold=hold,
        paused=lambda: False,
        idle_ms=10_000,
    )


async def _loop_run(loop: BatchLoop, consumer: _Consumer) -> None:
    operator = OperatorFactory(QUERY).build(0, journal=True)
    outboxes = {"results": OutboxState(), "dead": OutboxState()}
    await loop.run(cast(Any, consumer), operator, 7, 0, {"t.a": 0, "t.b": 0}, [], outboxes)


def _run(fail_batch: int | None, per_call: int = PER_TOPIC) -> _Outcome:
    async def main() -> _Outcome:
        consumer, stopping = _Consumer(per_call=per_call), asyncio.Event()
        store = _Store(consumer, stopping, fail_batch)
        publisher = _Publisher(store)
        loop = _loop(store, publisher, Hold())
        failure: BaseException | None = None
        try:
            await _loop_run(loop, consumer)
        except StateUnavailableError as exc:
            failure = exc
        await asyncio.sleep(0)  # a cancelled fetch ends
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
        return store, publisher, loop, failure, len(left)

    return asyncio.run(main())


def test_the_next_batch_is_fetched_while_the_commit_is_in_flight() -> None:
    store, publisher, loop, failure, tasks_left = _run(fail_batch=None)
    assert failure is None and tasks_left == 0
    assert [c.batch for c in store.committed] == [1, 2, 3]
    assert all(n >= 1 for n in store.fetched_during_commit[:2])  # the last one's prefetch: dropped
    assert loop.phases.batches == 3
    assert loop.phases.commit_ns > 0 and loop.phases.build_ns > 0
    published = [r for _, records in publisher.published for r in records]
    assert len(published) == sum(len(c.outbox["results"]) for c in store.committed) > 0


def test_a_failed_commit_publishes_nothing_of_its_batch_and_drops_the_prefetch() -> None:
    store, publisher, _, failure, tasks_left = _run(fail_batch=2)
    assert isinstance(failure, StateUnavailableError) and tasks_left == 0
    assert [c.batch for c in store.committed] == [1]
    assert store.fetched_during_commit[1] >= 1  # batch 3 was being read: it is dropped, not joined
    published = [r for _, records in publisher.published for r in records]
    assert len(published) == len(store.committed[0].outbox["results"]) > 0


def test_a_prefetched_batch_is_topped_up_to_its_share() -> None:
    # the consumer hands out one record per partition and call: the first batch takes one of each;
    # the next ones, read while a commit was in flight, get a second one once the commit answered
    store, _, _, failure, _ = _run(fail_batch=None, per_call=1)
    assert failure is None
    assert [c.offsets for c in store.committed] == [{"t.a": n, "t.b": n} for n in (1, 3, 5)]


def test_a_held_loop_waits_between_batches_with_everything_published_and_goes_on() -> None:
    # a rebalance's hold (operators/hold.py): the loop settles, commits nothing while held, and once
    # released goes on with the next batch of the same attempt
    async def main() -> tuple[_Store, _Publisher, list[int]]:
        consumer, stopping = _Consumer(per_call=2), asyncio.Event()
        store = _Store(consumer, stopping, stop_after=6)
        publisher = _Publisher(store)
        hold = Hold()
        task = asyncio.create_task(_loop_run(_loop(store, publisher, hold), consumer))
        while len(store.committed) < 2:
            await asyncio.sleep(0)
        hold.hold()
        assert await hold.settled(task, 5_000) and not task.done()
        held_at = len(store.committed)
        published = sum(len(records) for _, records in publisher.published)
        assert published == sum(len(c.outbox["results"]) for c in store.committed)  # all of it, before
        await asyncio.sleep(0.1)
        seen = [len(store.committed)]
        hold.release()
        await asyncio.wait_for(task, 5)
        return store, publisher, [held_at, *seen]

    store, publisher, (held_at, while_held) = asyncio.run(main())
    assert while_held == held_at < 6
    assert [c.batch for c in store.committed] == [1, 2, 3, 4, 5, 6]
    published = [r for _, records in publisher.published for r in records]
    assert len(published) == sum(len(c.outbox["results"]) for c in store.committed) > 0
