"""`Repartitioners`: the repartitioners a worker runs, one per source partition of each re-keyed
input whose slot it owns (`worker.slots`) (docs/joiner.md, "Re-keyed inputs").

The worker hands it the jobs it should run after every change of assignment or registry (`sync`);
it starts the missing ones, stops those no longer wanted (each finishes its batch), and restarts
one whose job changed or that ended. A rebalance holds those of the revoked slots
(`hold`) until the assignment says which to `release`. The producer they share is made with the
first one, so a worker whose queries re-key nothing has none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping

from streamjoin.joiner.config import WorkerConfig
from streamjoin.joiner.health import Health
from streamjoin.joiner.operators.config import OperatorConfig
from streamjoin.joiner.recovery.positions import PositionLog
from streamjoin.joiner.repartition.cleanup import InternalTopics
from streamjoin.joiner.repartition.marks import RekeyMarks
from streamjoin.joiner.repartition.producer import RekeyProducer
from streamjoin.joiner.repartition.repartitioner import RekeyJob, Repartitioner
from streamjoin.kafka import KafkaClients
from streamjoin.query.model import QueryDef
from streamjoin.registry import RegistryStore
from streamjoin.settings import Settings
from streamjoin.state.redis.repartition_store import RepartitionStore

__all__ = ["JobKey", "Repartitioners"]

JobKey = tuple[str, str, int]
"""(query, input, source partition)."""

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
        registry: RegistryStore,
        positions: PositionLog | None = None,
    ) -> None:
        """`positions`: where the repartitioners' positions are marked outside Redis (`repartition.marks`)."""
        self._kafka = kafka
        self._positions = positions
        self.store = store
        self.topics = InternalTopics(kafka, store, registry)
        self._owner = owner
        self._health = health
        self._config = config
        self._timeout_ms = message_timeout_ms
        self._producer: RekeyProducer | None = None
        self.running: dict[JobKey, Repartitioner] = {}

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        config: WorkerConfig,
        kafka: KafkaClients,
        health: Health,
        registry: RegistryStore,
        positions: PositionLog,
    ) -> Repartitioners:
        """Return the repartitioners of a worker (their positions in the worker's Redis)."""
        return cls(
            kafka,
            RepartitionStore.from_settings(settings, prefix=config.prefix),
            registry=registry,
            owner=config.worker_id,
            health=health,
            config=config.operator,
            message_timeout_ms=config.session_timeout_ms,
            positions=positions,
        )

    @staticmethod
    def key(job: RekeyJob) -> JobKey:
        """Return the key of `job`."""
        return job.query.name, job.stream, job.partition

    async def sync(self, wanted: Iterable[RekeyJob], kept: Iterable[RekeyJob] = ()) -> None:
        """Run exactly the `wanted` jobs; leave those `kept` (held by a rebalance) as they are."""
        jobs: Mapping[JobKey, RekeyJob] = {self.key(job): job for job in wanted}
        keep = {self.key(job): job for job in kept}
        stale = [
            k
            for k, r in self.running.items()
            if r.done or r.job != jobs.get(k, keep.get(k)) or (k not in jobs and not r.held)
        ]
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
                marks=self._marks(job),
            )
            self.running[key] = runner
            runner.start()

    def _marks(self, job: RekeyJob) -> RekeyMarks | None:
        if self._positions is None:
            return None
        return RekeyMarks(
            self._positions, self._positions.rekey_key(job.query.name, job.position_name, job.partition)
        )

    async def hold(self, keys: Iterable[JobKey]) -> None:
        """Hold the repartitioners of `keys` (a rebalance: `Repartitioner.hold`); stop those that do
        not settle within the stop timeout."""
        runners = {k: self.running[k] for k in keys if k in self.running}
        for runner in runners.values():
            runner.hold()
        settled = await asyncio.gather(*(r.settled() for r in runners.values()))
        await self.stop([k for k, ok in zip(runners, settled, strict=True) if not ok])

    def release(self, keys: Iterable[JobKey]) -> None:
        """Let the held repartitioners of `keys` go on (their source partitions came back)."""
        for key in keys:
            if key in self.running:
                self.running[key].release()

    async def stop(self, keys: Iterable[JobKey]) -> None:
        """Stop the repartitioners of `keys` (each finishes its current batch, bounded)."""
        runners = [self.running.pop(k) for k in list(keys) if k in self.running]
        await asyncio.gather(*(r.stop() for r in runners), return_exceptions=True)

    async def drop(self, query: QueryDef) -> None:
        """Fence a deleted query's repartitioners and delete their positions, and list its internal
        topics for deletion (the caller `sweep`s once for every query it
        dropped; `repartition.cleanup`: every worker tries, and whoever sweeps next finishes what a
        failure or a crash left)."""
        await self.topics.retire(query, deleted=True)

    async def redefined(self, query: QueryDef) -> None:
        """List the internal topics of the definition a redefinition replaced (the next sweep
        deletes those the new definition does not re-key)."""
        await self.topics.retire(query, deleted=False)

    async def sweep(self, after_s: float = 0.0) -> None:
        """Delete the internal topics no query uses, after `after_s` (failures are logged; the next
        sweep retries)."""
        await asyncio.sleep(after_s)
        try:
            await self.topics.sweep()
        except Exception as exc:
            _log.warning("deleting unused internal topics failed (retried): %s: %s", type(exc).__name__, exc)

    async def close(self) -> None:
        """Stop every repartitioner, flush the producer (bounded) and close the store."""
        await self.stop(list(self.running))
        if self._producer is not None:
            await asyncio.to_thread(self._producer.close, 2_000)
            self._producer = None
        await self.store.aclose()
