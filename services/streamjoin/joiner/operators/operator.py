"""`PartitionOperator`: the join of one query on one partition, exactly once (docs/exactly-once.md).

Life cycle (crash-only: any failure ends the attempt, and the next attempt starts from Redis):
1. claim (query, partition) in Redis, which fences every earlier owner, and read the checkpoint;
2. rebuild the engine from it (or, the first time, position every input at the query's `start`);
3. recover the outboxes: read the output partition from the last acknowledged offset, find the
   highest `sj-seq` already published, and publish only the committed records above it;
4. loop: read a batch from partition p of every input (from the committed offsets), join it, commit
   delta + next offsets + outbox records in ONE Redis script, then publish the records; the
   acknowledged sequence numbers are trimmed with the next commit.
`stop()` lets the current batch finish and waits (bounded) for its records to be acknowledged;
`hold()` does the same and then waits, its state in memory, for `release()` (a rebalance: hold.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable

from streamjoin.engine import JoinPlan, MultiJoin
from streamjoin.joiner.batch.builder import BatchBuilder
from streamjoin.joiner.batch.formats import registry_at
from streamjoin.joiner.health import Health
from streamjoin.joiner.operators.batch_loop import BatchLoop
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.operators.hold import Hold, Holdable
from streamjoin.joiner.operators.kafka_io import highest_published
from streamjoin.joiner.operators.stats import OperatorCounters
from streamjoin.joiner.operators.supervised import Attempts, stop_bounded
from streamjoin.joiner.publish.output_topics import OutputTopics
from streamjoin.joiner.publish.publisher import Publisher, PublishError
from streamjoin.joiner.recovery.positions import PositionKeeper
from streamjoin.joiner.recovery.rebuild import recover
from streamjoin.joiner.rekeyed.reader import RekeySetup, first_offsets, new_reader, wait_positioned
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
    StateStore,
    StateUnavailableError,
    Trim,
)

__all__ = ["OperatorConfig", "OutputTopics", "PartitionOperator"]

_log = logging.getLogger(__name__)
StatusCallback = Callable[[str, int, str], None]


class PartitionOperator(Holdable):
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
        self._hold = Hold()
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
        await self._hold.wait(self._stopping)  # no attempt begins while a rebalance holds the operator
        if self._stopping.is_set():
            return
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
        self._builder.reset(checkpoint.entries, checkpoint.raws, checkpoint.scalars)
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
                offsets = await first_offsets(
                    consumer, tps.values(), self.query.start, rekey, exact_ends=self._kafka.listed_ends_exact
                )
                outs = {n: TopicPartition(*self.outputs.partition(n, p)) for n in ("results", "dead")}
                ends = await end_offsets(consumer, list(outs.values()), exact=self._kafka.listed_ends_exact)
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
            loop = BatchLoop(
                self._component,
                p,
                builder=self._builder,
                store=self._store,
                publisher=self._publisher,
                outputs=self.outputs,
                config=self._config,
                stats=self.stats,
                positions=self._positions,
                stopping=self._stopping,
                hold=self._hold,
                paused=lambda: self.paused,
                idle_ms=self._idle_ms,
            )
            await loop.run(consumer, operator, epoch, batch_no, offsets, trims, checkpoint.outboxes)
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
                exact_ends=self._kafka.listed_ends_exact,
                unmarked_prefix=self._builder.output_prefix() if self.outputs.exclusive(name) else None,
            )
            first = box.acked + 1
            skip = max(published - first + 1, 0)
            todo = box.pending[skip:]
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
