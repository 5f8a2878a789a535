"""`Repartitioners`: the repartitioners a worker runs, one per source partition it owns of each
re-keyed input (docs/joiner.md, "Re-keyed inputs").

The worker hands it the jobs it should run after every change of assignment or registry (`sync`);
it starts the missing ones, stops those no longer wanted (each finishes its batch), and restarts
one whose job changed or that ended. The producer they share is made with the first one, so a
worker whose queries re-key nothing has none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from streamjoin.joiner.config import WorkerConfig
from streamjoin.joiner.health import Health
from streamjoin.joiner.operator_config import OperatorConfig
from streamjoin.joiner.rekey_producer import RekeyProducer
from streamjoin.joiner.repartitioner import RekeyJob, Repartitioner
from streamjoin.joiner.topic_setup import delete_internal_topics
from streamjoin.kafka import KafkaClients
from streamjoin.settings import Settings
from streamjoin.state.redis.repartition_store import RepartitionStore

__all__ = ["JobKey", "Repartitioners"]

JobKey = tuple[str, str, int]
"""(query, input, source partition)."""

Unsubscribe = Callable[[tuple[str, ...]], Awaitable[None]]
"""Stops the worker's group from reading topics (before they are deleted)."""

_log = logging.getLogger(__name__)


class Repartitioners:
    """Start and stop a worker's repartitioners."""

    def __init__(
        self,
        kafka: KafkaClients,
        store: RepartitionStore,
        *,
        owner: str,
        health: Health,
        config: OperatorConfig,
        message_timeout_ms: int,
    ) -> None:
        self._kafka = kafka
        self.store = store
        self._owner = owner
        self._health = health
        self._config = config
        self._timeout_ms = message_timeout_ms
        self._producer: RekeyProducer | None = None
        self.running: dict[JobKey, Repartitioner] = {}

    @classmethod
    def from_settings(
        cls, settings: Settings, config: WorkerConfig, kafka: KafkaClients, health: Health
    ) -> Repartitioners:
        """Return the repartitioners of a worker (their positions in the worker's Redis)."""
        return cls(
            kafka,
            RepartitionStore.from_settings(settings, prefix=config.prefix),
            owner=config.worker_id,
            health=health,
            config=config.operator,
            message_timeout_ms=config.session_timeout_ms,
        )

    @staticmethod
    def key(job: RekeyJob) -> JobKey:
        """Return the key of `job`."""
        return job.query.name, job.stream, job.partition

    async def sync(self, wanted: Iterable[RekeyJob]) -> None:
        """Run exactly the `wanted` jobs."""
        jobs: Mapping[JobKey, RekeyJob] = {self.key(job): job for job in wanted}
        stale = [k for k, r in self.running.items() if k not in jobs or r.done or r.job != jobs[k]]
        await self.stop(stale)
        for key, job in jobs.items():
            if key in self.running:
                continue
            if self._producer is None:
                self._producer = RekeyProducer(
                    self._kafka, client_id=f"{self._owner}-rekey", message_timeout_ms=self._timeout_ms
                )
            runner = Repartitioner(
                job,
                kafka=self._kafka,
                store=self.store,
                producer=self._producer,
                owner=self._owner,
                health=self._health,
                config=self._config,
            )
            self.running[key] = runner
            runner.start()

    async def stop(self, keys: Iterable[JobKey]) -> None:
        """Stop the repartitioners of `keys` (each finishes its current batch, bounded)."""
        runners = [self.running.pop(k) for k in list(keys) if k in self.running]
        await asyncio.gather(*(r.stop() for r in runners), return_exceptions=True)

    async def drop(self, query: str, internal: Iterable[str], unsubscribe: Unsubscribe) -> None:
        """Delete a deleted query's positions and internal topics (idempotent: every worker tries;
        one that fails leaves it to the others, logged)."""
        await self.store.drop(query)
        topics = tuple(dict.fromkeys(internal))
        await unsubscribe(topics)
        try:
            await asyncio.to_thread(delete_internal_topics, self._kafka, topics)
        except Exception as exc:
            _log.warning("query %s: deleting its internal topics failed: %s", query, exc)

    async def close(self) -> None:
        """Stop every repartitioner, flush the producer (bounded) and close the store."""
        await self.stop(list(self.running))
        if self._producer is not None:
            await asyncio.to_thread(self._producer.close, 2_000)
            self._producer = None
        await self.store.aclose()
