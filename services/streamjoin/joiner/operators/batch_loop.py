"""An operator's batch loop: fetch, join, commit to Redis, publish; and where its time goes.

One attempt of `PartitionOperator` (operator.py) runs one `BatchLoop`. Exactly once rests on its
order: a batch's records are published only after its commit (state delta + next offsets + outbox
records, one Redis script) succeeded, and the commits of one operator are sent one after another.
What overlaps is reading: the next batch is fetched while the commit is in flight (the fetched
records are only joined once the commit succeeded; a failed attempt drops them, and the next one
reads again from the committed offsets). Held by a rebalance (`hold.Hold`), the loop settles between
two batches as a stop does (publishes acknowledged, trimmed, marked) and waits to be released.

`LoopPhases` sums, per operator, the monotonic time the loop waited in each phase; the operator
logs them when it stops (bench/joiner_throughput.py prints the breakdown).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamjoin.joiner.batch.builder import BatchBuilder
from streamjoin.joiner.operators.backlog import ReadPositions, SourceBacklog
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.operators.hold import Hold
from streamjoin.joiner.operators.idle import IdleTracker
from streamjoin.joiner.operators.kafka_io import fetch_evenly
from streamjoin.joiner.operators.stats import OperatorCounters
from streamjoin.joiner.publish.output_topics import OutputTopics
from streamjoin.joiner.publish.publisher import Publisher
from streamjoin.joiner.recovery.positions import PositionKeeper
from streamjoin.kafka import Consumer, TopicPartition
from streamjoin.operator import JoinOperator
from streamjoin.state.base import FencedError, OutboxState, StateStore, StateUnavailableError, Trim

__all__ = ["BatchLoop", "LoopPhases"]

_log = logging.getLogger(__name__)
_Inflight = deque[tuple[str, int, "asyncio.Future[int]", int]]
_Fetched = dict[TopicPartition, list[Any]]
_PROBE_MS = 1_000
"""How often at most an operator asks whether its silent re-keyed sources are caught up (or once an
idle timeout, if shorter): `backlog.SourceBacklog`."""


@dataclass(slots=True)
class LoopPhases:
    """Nanoseconds (monotonic) an operator's loop spent in each phase, summed over its batches.

    `fetch_ns`: waiting for input records not yet fetched (a prefetch that finished during the
    commit costs nothing here); `build_ns`: joining a batch and building its commit (CPU, on the
    event loop); `commit_ns`: waiting for the Redis commit; `backpressure_ns`: waiting for
    publishes when more than `max_inflight` are unacknowledged.
    """

    batches: int = 0
    fetch_ns: int = 0
    build_ns: int = 0
    commit_ns: int = 0
    backpressure_ns: int = 0

    def describe(self) -> str:
        """Return the breakdown as one log line's text (seconds)."""
        return (
            f"{self.batches} batches: fetch {self.fetch_ns / 1e9:.2f} s, build {self.build_ns / 1e9:.2f} s, "
            f"commit {self.commit_ns / 1e9:.2f} s, backpressure {self.backpressure_ns / 1e9:.2f} s"
        )


class BatchLoop:
    """Run the batches of one operator's attempt until `stopping` is set; see the module docstring."""

    def __init__(
        self,
        component: str,
        partition: int,
        *,
        builder: BatchBuilder,
        store: StateStore,
        publisher: Publisher,
        outputs: OutputTopics,
        config: OperatorConfig,
        stats: OperatorCounters,
        positions: PositionKeeper | None,
        stopping: asyncio.Event,
        hold: Hold,
        paused: Callable[[], bool],
        idle_ms: int,
    ) -> None:
        """`hold`, `paused`: read before every batch (a rebalance's hold, the operator's `paused` flag)."""
        self._component = component
        self._query = stats.query.name
        self._partition = partition
        self._builder = builder
        self._store = store
        self._publisher = publisher
        self._outputs = outputs
        self._config = config
        self._stats = stats
        self._positions = positions
        self._stopping = stopping
        self._hold = hold
        self._paused = paused
        self._idle_ms = idle_ms
        self.phases = LoopPhases()
        self._prefetch: asyncio.Future[_Fetched] | None = None
        self._sources: SourceBacklog | None = None

    async def run(
        self,
        consumer: Consumer,
        operator: JoinOperator,
        epoch: int,
        batch_no: int,
        offsets: dict[str, int],
        trims: list[Trim],
        outboxes: dict[str, OutboxState],
    ) -> None:
        """Loop from the committed `offsets` (the consumer is positioned there) until stopped."""
        try:
            await self._run(consumer, operator, epoch, batch_no, offsets, trims, outboxes)
        finally:
            self._drop_prefetch()
            if self._sources is not None:
                self._sources.close()
            _log.info("%s: loop phases over %s", self._component, self.phases.describe())

    def _drop_prefetch(self) -> None:
        """Cancel a fetch still under way: the attempt ends, the next one reads from the commit."""
        prefetch, self._prefetch = self._prefetch, None
        if prefetch is not None:
            prefetch.cancel()
            prefetch.add_done_callback(_consume_outcome)

    async def _run(
        self,
        consumer: Consumer,
        operator: JoinOperator,
        epoch: int,
        batch_no: int,
        offsets: dict[str, int],
        trims: list[Trim],
        outboxes: dict[str, OutboxState],
    ) -> None:
        q, p, cfg, phases = self._query, self._partition, self._config, self.phases
        builder, positions, stats = self._builder, self._positions, self._stats
        seqs = {name: box.seq for name, box in outboxes.items()}
        exclusive = {name: self._outputs.exclusive(name) for name in outboxes}
        inflight: _Inflight = deque()
        read = ReadPositions(consumer)
        idle_tracker = IdleTracker(
            operator.engine.set_idle,
            operator.engine.is_idle,
            p,
            builder.direct_streams_of,
            self._idle_ms,
            time.monotonic(),
            caught_up=lambda topic: read.caught_up(TopicPartition(topic, p)),
        )
        rekeyed = builder.rekeyed
        self._sources = (
            SourceBacklog.of(consumer, rekeyed.setup, p, interval_ms=min(self._idle_ms, _PROBE_MS))
            if rekeyed is not None
            else None
        )
        fence = functools.partial(self._store.check_owner, q, p, epoch)  # zombie fencing
        tp_list = sorted(consumer.assignment(), key=lambda tp: tp.topic)
        clock = time.perf_counter_ns
        while True:
            trims = self._collect_acks(inflight, trims)
            if positions is not None:  # a progress marker, once what is in flight is acknowledged
                await positions.tick(batch_no, [f for _, _, f, _ in inflight])
            if self._stopping.is_set():
                break
            if self._hold.held:  # a rebalance: settle, then wait with the state in memory
                trims = await self._settle(inflight, trims, epoch, batch_no)
                if not inflight:
                    await self._hold.wait(self._stopping)
                continue
            if self._paused():
                await asyncio.sleep(cfg.poll_ms / 1000)
                continue
            t0 = clock()
            prefetch, self._prefetch = self._prefetch, None
            fetched = await prefetch if prefetch is not None else None
            data = await fetch_evenly(consumer, tp_list, cfg.max_batch, cfg.poll_ms, fetched)
            t1 = clock()
            now = time.monotonic()
            idle_changed = await idle_tracker.update(data, now)
            if (
                rekeyed is not None
                and self._sources is not None
                and rekeyed.update_idle(now, self._sources, offsets)
            ):
                idle_changed = True
            if not data and not idle_changed and not trims:
                continue  # idle: no input (not counted as a wait)
            phases.fetch_ns += t1 - t0
            built = builder.build(
                operator,
                data,
                batch=batch_no + 1,
                offsets=offsets,
                trims=trims,
                last_arrival=idle_tracker.last_arrival,
                now=now,
            )
            if positions is not None:
                built = positions.batch(built)
            t2 = clock()
            if data:  # read the next batch while this one's commit is in flight (module docstring)
                self._prefetch = asyncio.ensure_future(
                    fetch_evenly(consumer, tp_list, cfg.max_batch, cfg.poll_ms)
                )
            await self._store.commit(q, p, epoch, built.commit)
            t3 = clock()
            phases.build_ns += t2 - t1
            phases.commit_ns += t3 - t2
            phases.batches += 1
            batch_no += 1
            trims = []
            stats.on_batch(built, consumer.highwater, p, offsets)
            for name, records in (("results", built.results), ("dead", built.dead)):
                if not records:
                    continue
                first = seqs[name] + 1
                seqs[name] += len(records)
                topic, out_p = self._outputs.partition(name, p)
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
            phases.backpressure_ns += clock() - t3
            if built.newest_kafka_ms is not None and built.results:
                stats.observe_latency(time.time() - built.newest_kafka_ms / 1000, len(built.results))
        self._drop_prefetch()
        await self._settle(inflight, trims, epoch, batch_no)

    async def _settle(self, inflight: _Inflight, trims: list[Trim], epoch: int, batch_no: int) -> list[Trim]:
        """Wait (bounded) for what is in flight, record the acknowledgements and write the marker
        (stopping, or held); return the trims left to the next commit."""
        if inflight:
            await asyncio.wait([f for _, _, f, _ in inflight], timeout=self._config.stop_timeout_ms / 1000)
            trims = self._collect_acks(inflight, trims)
        if trims:
            with contextlib.suppress(StateUnavailableError, FencedError):
                await self._store.trim(self._query, self._partition, epoch, trims)
                trims = []
        if self._positions is not None and not inflight:
            await self._positions.final(batch_no)
        return trims

    def _collect_acks(self, inflight: _Inflight, trims: list[Trim]) -> list[Trim]:
        """Turn acknowledged publishes (in order) into trims; raise if one failed."""
        latest: dict[str, Trim] = {t.outbox: t for t in trims}
        while inflight and inflight[0][2].done():
            name, seq, future, count = inflight.popleft()
            offset = future.result()  # raises PublishError: the attempt ends, recovery re-publishes
            latest[name] = Trim(name, seq, offset)
            if self._positions is not None:
                self._positions.published(name, offset)
            self._stats.published[name] += count
        return list(latest.values())


def _consume_outcome(future: asyncio.Future[_Fetched]) -> None:
    """Retrieve a dropped fetch's outcome, so a failure is not reported as never retrieved."""
    if not future.cancelled():
        future.exception()
