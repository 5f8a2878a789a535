"""`ReaderPool`: the operators of a worker share aiokafka consumers instead of one each.

Every consumer is a fetch loop, and the embedded broker's cost grows with every fetch request and
every partition in it (`bench/broker_latency.py`, docs/performance.md "Session 4": four extra
one-partition consumers cost it twice the CPU of one consumer reading the same four partitions).
So operators lease partitions of a pooled consumer. A consumer has one position per partition, so
two operators reading the same topic-partition (two queries of one stream) lease different
consumers: a worker runs as many consumers as the most queries that read one partition.

Leasing or returning partitions re-assigns the consumer, which forgets every position and
prefetched record; the pool re-seeks the other leases' partitions to where their owners stopped
reading (tracked here from what `getmany` returned), in the same step, so no record is skipped or
read twice. That costs a re-fetch, and happens only when an operator starts or stops.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from streamjoin.joiner.kafka_io import KafkaClients, new_consumer, start_consumer

__all__ = ["ReaderLease", "ReaderPool"]

_log = logging.getLogger(__name__)


class _PooledConsumer:
    """One consumer and the next offset each of its leased partitions' owner will read."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.consumer = consumer
        self.positions: dict[TopicPartition, int] = {}

    def reassign(self, positions: dict[TopicPartition, int]) -> None:
        """Assign exactly `positions` and seek each partition there (no await: nothing runs between)."""
        self.positions = positions
        self.consumer.assign(list(positions))
        for tp, offset in positions.items():
            self.consumer.seek(tp, offset)


class ReaderLease:
    """An operator's partitions of a pooled consumer, read from its own positions."""

    def __init__(self, pooled: _PooledConsumer, partitions: frozenset[TopicPartition]) -> None:
        self._pooled = pooled
        self.partitions = partitions

    async def getmany(
        self, *tps: TopicPartition, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[Any]]:
        """Return records of `tps` (all leased by this lease), as `AIOKafkaConsumer.getmany`."""
        data: dict[TopicPartition, list[Any]] = await self._pooled.consumer.getmany(
            *tps, timeout_ms=timeout_ms, max_records=max_records
        )
        positions = self._pooled.positions
        for tp, records in data.items():
            if records:
                positions[tp] = records[-1].offset + 1
        return data

    def highwater(self, tp: TopicPartition) -> int | None:
        """Return the partition's high watermark from the last fetch response (None before one)."""
        high: int | None = self._pooled.consumer.highwater(tp)
        return high


class ReaderPool:
    """The consumers of one worker, leased by partition (module docstring)."""

    def __init__(self, kafka: KafkaClients, *, client_id: str, fetch_wait_ms: int = 10) -> None:
        self._kafka = kafka
        self._client_id = client_id
        self._fetch_wait_ms = fetch_wait_ms
        self._pooled: list[_PooledConsumer] = []
        self._made = 0

    @property
    def consumers(self) -> int:
        """Return how many consumers the pool runs now."""
        return len(self._pooled)

    async def lease(self, offsets: Mapping[TopicPartition, int]) -> ReaderLease:
        """Lease the partitions of `offsets`, positioned at those offsets."""
        wanted = frozenset(offsets)
        pooled = next((c for c in self._pooled if wanted.isdisjoint(c.positions)), None)
        if pooled is None:
            self._made += 1
            consumer = new_consumer(
                self._kafka, client_id=f"{self._client_id}-{self._made}", fetch_wait_ms=self._fetch_wait_ms
            )
            await start_consumer(consumer)
            # Another lease may have taken a free consumer while this one started: use the new one.
            pooled = _PooledConsumer(consumer)
            self._pooled.append(pooled)
        pooled.reassign({**pooled.positions, **offsets})
        return ReaderLease(pooled, wanted)

    async def release(self, lease: ReaderLease) -> None:
        """Give the lease's partitions back; stop the consumer when it has no partitions left."""
        pooled = lease._pooled  # noqa: SLF001 (the pool and its leases are one unit)
        if pooled not in self._pooled:
            return
        rest = {tp: off for tp, off in pooled.positions.items() if tp not in lease.partitions}
        if rest:
            pooled.reassign(rest)
            return
        self._pooled.remove(pooled)
        pooled.positions = {}
        try:
            await pooled.consumer.stop()
        except Exception:  # a consumer that cannot stop cleanly is dropped all the same
            _log.warning("stopping a pooled consumer failed", exc_info=True)

    async def close(self) -> None:
        """Stop every consumer (the operators have stopped)."""
        pooled, self._pooled = self._pooled, []
        for p in pooled:
            try:
                await p.consumer.stop()
            except Exception:
                _log.warning("stopping a pooled consumer failed", exc_info=True)
