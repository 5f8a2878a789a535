"""`PartitionOperator`: the join of one query on one partition, exactly once (docs/exactly-once.md).

Life cycle (crash-only: any failure ends the attempt, and the next attempt starts from Redis):
1. claim (query, partition) in Redis, which fences every earlier owner, and read the checkpoint;
2. rebuild the engine from it (or, the first time, position every input at the query's `start`);
3. recover the outboxes: read the output partition from the last acknowledged offset, find the
   highest `sj-seq` already published, and publish only the committed records above it;
4. loop: read a batch from partition p of every input (from the committed offsets), join it, commit
   delta + next offsets + outbox records in ONE Redis script, then publish the records; the
   acknowledged sequence numbers are trimmed with the next commit.
`stop()` lets the current batch finish and waits (bounded) for its records to be acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from collections.abc import Callable

from streamjoin.engine import JoinPlan, MultiJoin
from streamjoin.joiner.batch import BatchBuilder
from streamjoin.joiner.formats import registry_at
from streamjoin.joiner.health import Health
from streamjoin.joiner.idle import IdleTracker
from streamjoin.joiner.kafka_io import fetch_evenly, highest_published
from streamjoin.joiner.operator_config import OperatorConfig, OutputTopics
from streamjoin.joiner.operator_stats import OperatorCounters
from streamjoin.joiner.outbox import decode_record
from streamjoin.joiner.positions import PositionKeeper
from streamjoin.joiner.publisher import Publisher, PublishError
from streamjoin.joiner.rebuild import recover
from streamjoin.joiner.rekeyed import RekeySetup, first_offsets, new_reader, wait_positioned
from streamjoin.joiner.supervised import Attempts, stop_bounded
from streamjoin.kafka import (
    Consumer,
    ConsumerError,
    KafkaClients,
    TopicPartition,
    end_offsets,
    new_consumer,
    start_consumer,
)
from streamjoin.operator import JoinOperator, OperatorFactory
from streamjoin.state.base import (
    Checkpoint,
    CommitBatch,
    FencedError,
    OutboxState,
    StateStore,
    StateUnavailableError,
    Trim,
)

__all__ = ["OperatorConfig", "OutputTopics", "PartitionOperator"]

_log = logging.getLogger(__name__)
StatusCallback = Callable[[str, int, str], None]


class PartitionOperator:
    """Run `query` on `partition` until stopped; see the module docstring."""

    def __init__(
        self,
        factory: OperatorFactory,
        partition: int,
        *,
        outputs: OutputTopics,
        kafka: KafkaClients,
        store: StateStore,
        publisher: Publisher,
        owner: str,
        health: Health,
        config: OperatorConfig,
        on_status: StatusCallback,
        positions: PositionKeeper | None = None,
        rekey: RekeySetup | None = None,
    ) -> None:
        """`rekey`: how to read the query's re-keyed inputs (None: every input is read directly)."""
        query = factory.query
        self.query = query
        self.partition = partition
        self._factory = factory
        self.outputs = outputs
        self._kafka = kafka
        self._store = store
        self._publisher = publisher
        self._owner = owner
        self._health = health
        self._config = config
        self._on_status = on_status
        self._positions = positions  # progress markers: lost Redis state is rebuilt (rebuild.py)
        self._builder = BatchBuilder(
            query,
            partition,
            outputs.dead,
            max_future=config.max_future,
            max_record_bytes=config.max_record_bytes,
            internal_topics=rekey.internal_topics if rekey is not None else None,
            schemas=registry_at(config.schema_registry_url),
        )
        self._rekey = rekey
        self.stats = OperatorCounters(query, rekey.internal_topics if rekey is not None else None)
        self.operator: JoinOperator | None = None
        """The query's operator on this partition, rebuilt by every attempt."""
        self.paused = False
        self.state = "positioning"  # `running` once an attempt reads its inputs
        self.error: tuple[str, float] | None = None  # why the last attempt failed, since when (unix s)
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._component = f"operator {query.name}[{partition}]"
        largest = query.largest_window
        default_idle = int(10 * largest) if largest > 0 else 10_000
        self._idle_ms = config.idle_timeout_ms if config.idle_timeout_ms is not None else default_idle

    # -- life cycle ---------------------------------------------------------------------------

    @property
    def engine(self) -> MultiJoin | None:
        """Return the engine of the current attempt (None before the first)."""
        return self.operator.engine if self.operator is not None else None

    def set_plan(self, plan: JoinPlan) -> None:
        """Switch the join order between batches (later attempts start from the planner's plan)."""
        if self.operator is not None:
            self.operator.set_plan(plan)

    def start(self) -> None:
        """Start running in a task."""
        self._task = asyncio.create_task(self._run(), name=self._component)

    async def stop(self) -> None:
        """Finish the current batch, wait (bounded) for its records to be published, and stop."""
        self._stopping.set()
        try:
            await stop_bounded(self._component, self._task, self._config.stop_timeout_ms)
        finally:  # a stopped operator (its query deleted, its partition moved) is no problem of ours
            self._health.ok(self._component)

    @property
    def done(self) -> bool:
        """Return True once the task has ended."""
        return self._task is not None and self._task.done()

    async def _run(self) -> None:
        expected = (StateUnavailableError, PublishError, ConsumerError, OSError, TimeoutError)
        ok = functools.partial(self._health.ok, self._component)
        attempts = Attempts(self._component, expected, self._failed, ok, restarts_from="checkpoint")
        await attempts.run(self._attempt, self._stopping, self._config)

    def _failed(self, exc: Exception) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        self._health.fail(self._component, reason)
        self.error = (reason, self.error[1] if self.error is not None else time.time())
        self._report("positioning")

    def _report(self, state: str) -> None:
        self.state = state
        if state == "running":
            self.error = None
        self._on_status(self.query.name, self.partition, state)

    # -- one attempt --------------------------------------------------------------------------

    async def _attempt(self) -> None:
        q, p = self.query.name, self.partition
        # Records a failed attempt left in the producer's queue must land before the tail is read.
        await self._publisher.flush(self._config.stop_timeout_ms)
        checkpoint = await self._store.claim(q, p, self._owner, self._builder.input_topics)
        epoch = checkpoint.epoch
        _log.info(
            "%s: claimed (epoch %d, batch %d, %d entries)",
            self._component,
            epoch,
            checkpoint.batch,
            len(checkpoint.entries),
        )
        if self._positions is not None:  # Redis lost (or rolled back) what the marker has: rebuild it
            await recover(self._positions, self._builder, checkpoint)
        rekey = self._rekey
        operator = self._factory.build(p, journal=True, sources=rekey.sources if rekey is not None else None)
        engine = operator.engine
        if checkpoint.scalars is not None:
            engine.restore(checkpoint.entries, checkpoint.scalars)
        self._builder.reset(checkpoint.entries, checkpoint.raws)
        self._builder.rekeyed = new_reader(rekey, checkpoint.sources, engine, self._idle_ms)
        self.operator = operator
        self.stats.restore(checkpoint.counters)
        consumer = new_consumer(
            self._kafka, client_id=f"{self._owner}-{q}-{p}", fetch_wait_ms=self._config.fetch_wait_ms
        )
        await start_consumer(consumer)
        try:
            tps = {t: TopicPartition(t, p) for t in self._builder.topics}
            batch_no = checkpoint.batch
            offsets = dict(checkpoint.offsets)
            if not checkpoint.positioned:
                self._report("positioning")
                offsets = await first_offsets(consumer, tps.values(), self.query.start, rekey)
                outs = {n: TopicPartition(*self.outputs.partition(n, p)) for n in ("results", "dead")}
                ends = await end_offsets(consumer, list(outs.values()))
                batch_no += 1
                await self._store.commit(
                    q,
                    p,
                    epoch,
                    CommitBatch(
                        batch=batch_no,
                        offsets=offsets,
                        scalars=engine.take_delta().scalars,
                        output_start={n: ends[tp] for n, tp in outs.items()},
                        topics=self._builder.input_topics,
                    ),
                )
                checkpoint.output_start = {n: ends[tp] for n, tp in outs.items()}
            if self._positions is not None:
                self._positions.reset(checkpoint)
            trims = await self._recover_outboxes(consumer, checkpoint)
            await wait_positioned(rekey, self._stopping)  # `running` once the sources are positioned too
            self._health.ok(self._component)
            self._report("running")
            _log.info("%s: running from offsets %s", self._component, offsets)
            consumer.assign(list(tps.values()))
            for topic, tp in tps.items():
                consumer.seek(tp, offsets[topic])
            await self._loop(consumer, operator, epoch, batch_no, offsets, trims, checkpoint.outboxes)
        finally:
            await consumer.stop()

    async def _recover_outboxes(self, consumer: Consumer, checkpoint: Checkpoint) -> list[Trim]:
        q, p = self.query.name, self.partition
        trims: list[Trim] = []
        for name, box in checkpoint.outboxes.items():
            if not box.pending:
                continue
            topic, out_p = self.outputs.partition(name, p)
            start = max(box.acked_offset + 1, checkpoint.output_start.get(name, 0))
            published, offset = await highest_published(
                consumer,
                TopicPartition(topic, out_p),
                query=q,
                partition=p,
                from_offset=start,
                acked=box.acked,
                unmarked_prefix=self._builder.output_prefix() if self.outputs.exclusive(name) else None,
            )
            first = box.acked + 1
            skip = max(published - first + 1, 0)
            todo = [decode_record(raw) for raw in box.pending[skip:]]
            _log.info("%s: outbox %s holds %d..%d, %d published", self._component, name, first, box.seq, skip)
            if todo:
                offset = await self._publisher.publish(
                    topic,
                    out_p,
                    first + skip,
                    todo,
                    query=q,
                    source_partition=p,
                    seq_on_last_only=self.outputs.exclusive(name),
                    fence=functools.partial(self._store.check_owner, q, p, checkpoint.epoch),
                )
                self.stats.published[name] += len(todo)
            trims.append(Trim(name, box.seq, offset))
        return trims

    async def _loop(
        self,
        consumer: Consumer,
        operator: JoinOperator,
        epoch: int,
        batch_no: int,
        offsets: dict[str, int],
        trims: list[Trim],
        outboxes: dict[str, OutboxState],
    ) -> None:
        q, p, cfg = self.query.name, self.partition, self._config
        seqs = {name: box.seq for name, box in outboxes.items()}
        exclusive = {name: self.outputs.exclusive(name) for name in outboxes}
        tp_list = sorted(consumer.assignment(), key=lambda tp: tp.topic)
        inflight: deque[tuple[str, int, asyncio.Future[int], int]] = deque()
        idle_tracker = IdleTracker(
            operator.engine.set_idle,
            p,
            self._builder.direct_streams_of,
            [s for topic in self._builder.direct_streams_of.values() for s, _ in topic],
            self._idle_ms,
            time.monotonic(),
        )
        fence = functools.partial(self._store.check_owner, q, p, epoch)  # zombie fencing
        while True:
            trims = self._collect_acks(inflight, trims)
            if self._positions is not None:  # a progress marker, once what is in flight is acknowledged
                await self._positions.tick(batch_no, [f for _, _, f, _ in inflight])
            if self._stopping.is_set():
                break
            if self.paused:
                await asyncio.sleep(cfg.poll_ms / 1000)
                continue
            data = await fetch_evenly(consumer, tp_list, self._config.max_batch, self._config.poll_ms)
            now = time.monotonic()
            idle_changed = idle_tracker.update(data, now)
            if self._builder.rekeyed is not None and self._builder.rekeyed.update_idle(now):
                idle_changed = True
            if not data and not idle_changed and not trims:
                continue
            built = self._builder.build(
                operator,
                data,
                batch=batch_no + 1,
                offsets=offsets,
                trims=trims,
                last_arrival=idle_tracker.last_arrival,
                now=now,
            )
            if self._positions is not None:
                built = self._positions.batch(built)
            await self._store.commit(q, p, epoch, built.commit)
            batch_no += 1
            trims = []
            self.stats.on_batch(built, consumer.highwater, p, offsets)
            for name, records in (("results", built.results), ("dead", built.dead)):
                if not records:
                    continue
                first = seqs[name] + 1
                seqs[name] += len(records)
                topic, out_p = self.outputs.partition(name, p)
                future = asyncio.ensure_future(
                    self._publisher.publish(
                        topic,
                        out_p,
                        first,
                        records,
                        query=q,
                        source_partition=p,
                        seq_on_last_only=exclusive[name],
                        fence=fence,
                    )
                )
                inflight.append((name, seqs[name], future, len(records)))
            while len(inflight) > cfg.max_inflight:
                await asyncio.wait([inflight[0][2]])
                trims = self._collect_acks(inflight, trims)
            if built.newest_kafka_ms is not None and built.results:
                self.stats.observe_latency(time.time() - built.newest_kafka_ms / 1000, len(built.results))
        # Stopping: wait (bounded) for what is in flight, then record the acknowledgements.
        if inflight:
            await asyncio.wait([f for _, _, f, _ in inflight], timeout=cfg.stop_timeout_ms / 1000)
            trims = self._collect_acks(inflight, trims)
        if trims:
            with contextlib.suppress(StateUnavailableError, FencedError):
                await self._store.trim(q, p, epoch, trims)
        if self._positions is not None and not inflight:
            await self._positions.final(batch_no)

    def _collect_acks(
        self, inflight: deque[tuple[str, int, asyncio.Future[int], int]], trims: list[Trim]
    ) -> list[Trim]:
        """Turn acknowledged publishes (in order) into trims; raise if one failed."""
        latest: dict[str, Trim] = {t.outbox: t for t in trims}
        while inflight and inflight[0][2].done():
            name, seq, future, count = inflight.popleft()
            offset = future.result()  # raises PublishError: the attempt ends, recovery re-publishes
            latest[name] = Trim(name, seq, offset)
            if self._positions is not None:
                self._positions.published(name, offset)
            self.stats.published[name] += count
        return list(latest.values())
