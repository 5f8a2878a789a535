"""`JoinerWorker`: one `streamjoin joiner` process (docs/joiner.md).

It follows the registry, subscribes its Faust app to the slots topic (`worker.slots`), and runs one
`PartitionOperator` per (query, partition) and the repartitioners whose slot the group assigned it.
A query registered or deleted changes no subscription: its operators start or stop at once. Faust's
revoke signal (a worker joined or left) holds what runs in the revoked slots (`worker.rebalance`);
the assign signal releases what came back, and the rest stops. New operators claim their
partitions in Redis (fencing any zombie) and resume from the committed state.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from streamjoin.joiner.config import WorkerConfig
from streamjoin.joiner.group.app import make_app, subscribe
from streamjoin.joiner.health import Health, serve_readiness
from streamjoin.joiner.layout.layouts import QueryLayouts
from streamjoin.joiner.layout.query_layout import QueryLayout, lay_out
from streamjoin.joiner.layout.topic_setup import ensure_slots_topic
from streamjoin.joiner.operators.operator import PartitionOperator
from streamjoin.joiner.publish.publisher import Publisher
from streamjoin.joiner.recovery.positions import PositionLog
from streamjoin.joiner.registry_follow.epoch import RegistryEpoch
from streamjoin.joiner.registry_follow.lag import RegistryLag
from streamjoin.joiner.registry_follow.status import StatusReporter
from streamjoin.joiner.registry_follow.watch import QuerySpec, specs_from_snapshot
from streamjoin.joiner.repartition.repartitioner import RekeyJob
from streamjoin.joiner.repartition.repartitioners import Repartitioners
from streamjoin.joiner.worker.assignment import Assignment
from streamjoin.joiner.worker.checks import EXIT_MISCONFIGURED, probe_kafka, publish_stats, watch_faust
from streamjoin.joiner.worker.planning import QueryFactories
from streamjoin.joiner.worker.rebalance import OpKey, hold, release
from streamjoin.joiner.worker.slots import slot_of
from streamjoin.joiner.worker.tasks import cancel_and_wait, every, retry_until_stopped
from streamjoin.kafka import Consumer, KafkaClients, new_consumer
from streamjoin.registry import RegistryStore
from streamjoin.settings import Settings
from streamjoin.state.redis import RedisStateStore
from streamjoin.topics import SLOTS_TOPIC

__all__ = ["JoinerWorker"]

_log = logging.getLogger(__name__)


class JoinerWorker:
    """Run the operators this worker owns until `request_stop`."""

    def __init__(self, settings: Settings, config: WorkerConfig) -> None:
        self.settings = settings
        self.config = config
        self.health = Health()
        self._stop = asyncio.Event()
        self._kafka = KafkaClients.from_settings(settings)
        self._registry = RegistryStore.from_settings(settings, prefix=config.prefix)
        self._store = RedisStateStore.from_settings(settings, prefix=config.prefix)
        self._publisher: Publisher | None = None
        self._positions = PositionLog(self._kafka, prefix=config.prefix)  # lost state vs new query
        self._epoch = RegistryEpoch()
        self._app: Any = None
        self._meta: Consumer | None = None
        # Faust wants a data directory; nothing is kept there, so a private one that goes with us.
        self._faust_dir = tempfile.TemporaryDirectory(prefix="streamjoin-faust-")
        self._specs: dict[str, QuerySpec] = {}
        self._rekeyers = Repartitioners.from_settings(
            settings, config, self._kafka, self.health, self._registry, self._positions
        )
        self._assignment = Assignment()
        self._ops: dict[OpKey, PartitionOperator] = {}
        self._op_fingerprint: dict[OpKey, str] = {}
        self._factories = QueryFactories()
        self._status = StatusReporter(self._registry, config.worker_id)
        self._version = 0
        self._applied = 0  # the version whose snapshot `_apply` finished taking in
        self._lag = RegistryLag(config.registry_lag_ms)
        self._lock = asyncio.Lock()
        self._laid = QueryLayouts(  # `self._specs` is replaced on each change: read it when asked
            self._lay_out, lambda name: self._specs.get(name), lock=self._lock, status=self._status,
            registry=self._registry, on_laid_out=self._kick, concurrency=config.layout_concurrency,
        )  # fmt: skip
        self._layouts, self._partitions = self._laid.by_query, self._laid.partitions
        self._started_at = time.time()
        self._tasks: set[asyncio.Future[None]] = set()
        self.exit_code = 0  # the process's, once `run` returned (`group.watch.EXIT_GROUP_STALLED`: rejoin)

    def request_stop(self, exit_code: int = 0) -> None:
        """Ask the worker to shut down (SIGTERM, or `exit_code` != 0: it must be started again)."""
        self.exit_code = self.exit_code or exit_code
        self._stop.set()

    async def stop_requested(self) -> None:
        """Return once a shutdown was asked for (the caller bounds how long it may take)."""
        await self._stop.wait()

    # -- life cycle ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Start everything, serve until `request_stop`, and shut down in order."""
        server = None
        if self.config.ready_port is not None:
            server = await serve_readiness(self.health, self.config.ready_host, self.config.ready_port)
        self._publisher = Publisher(  # records older than a session timeout expire: zombie fencing
            self._kafka, client_id=self.config.worker_id, message_timeout_ms=self.config.session_timeout_ms,
            max_batch_bytes=self.config.operator.max_record_bytes,
        )  # fmt: skip
        self._meta = new_consumer(self._kafka, client_id=f"{self.config.worker_id}-meta")
        tasks: list[asyncio.Task[None]] = []
        try:
            await self._retry_until_stopped("kafka", self._meta.start)
            slots = await self._retry_until_stopped(
                "kafka", lambda: asyncio.to_thread(ensure_slots_topic, self._kafka, self.config.slots)
            )
            snapshot = await self._retry_until_stopped("redis", self._registry.snapshot)
            if snapshot is None:
                return
            # Another slot count would move every operator; state Redis may evict loses results silently.
            problem = slots if isinstance(slots, str) else await self._store.eviction_problem()
            if problem is not None:
                _log.error("worker %s cannot start: %s", self.config.worker_id, problem)
                return self.request_stop(EXIT_MISCONFIGURED)
            self._app = make_app(
                self.config.group, self._kafka, datadir=self._faust_dir.name,
                session_timeout_ms=self.config.session_timeout_ms, group_stall_ms=self.config.group_stall_ms,
            )  # fmt: skip
            guard = watch_faust(self._app, self.health, self.request_stop)  # from the first join on
            tasks = [asyncio.create_task(guard, name="faust")]
            self._app.on_partitions_revoked.connect(self._on_revoked)
            self._app.on_partitions_assigned.connect(self._on_assigned)
            self._specs, _ = specs_from_snapshot(snapshot)
            self._version = self._applied = snapshot.version
            subscribe(self._app, SLOTS_TOPIC)  # the group's one subscription, whatever the queries
            self._app.finalize()
            await self._app.start()
            self.health.started = True
            _log.info("worker %s started (group %s)", self.config.worker_id, self.config.group)
            tasks += [asyncio.create_task(self._watch_registry(), name="registry")] + [
                asyncio.create_task(every(self.health, interval_ms, job), name=name)
                for name, interval_ms, job in (
                    ("heartbeat", self.config.heartbeat_ms, self._heartbeat),
                    ("stats", self.config.stats_interval_ms, self._publish_stats),
                    ("replan", self.config.replan_interval_ms, self._replan),
                    ("kafka", 1_000, self._probe_kafka),
                    ("internal-topics", 10_000, self._rekeyers.sweep),
                )
            ]
            await self._stop.wait()
        finally:
            await self._shutdown(tasks, server)

    async def _shutdown(self, tasks: list[asyncio.Task[None]], server: asyncio.Server | None) -> None:
        _log.info("worker %s stopping", self.config.worker_id)
        await cancel_and_wait(tasks, timeout_s=2.0)
        await self._laid.close()
        async with self._lock:
            await self._stop_ops(list(self._ops), released="the worker stopped")
            await self._rekeyers.close()
        if self._app is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.config.shutdown_timeout_ms / 2000):
                    await self._app.stop()
        await asyncio.to_thread(self._positions.close)
        if self._publisher is not None:
            await asyncio.to_thread(self._publisher.close, 2_000)
        if self._meta is not None:
            with contextlib.suppress(Exception):
                await self._meta.stop()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1):
                await self._registry.remove_worker(self.config.worker_id)
        with contextlib.suppress(Exception):
            await self._registry.aclose()
            await self._store.aclose()
        if server is not None:
            server.close()
        self._faust_dir.cleanup()
        _log.info("worker %s stopped", self.config.worker_id)

    async def _retry_until_stopped(self, component: str, call: Any) -> Any:
        return await retry_until_stopped(self.health, self._stop, component, call)

    # -- registry -----------------------------------------------------------------------------

    async def _watch_registry(self) -> None:
        while True:
            try:
                async for version in self._registry.watch():
                    if version != self._version or not self._layouts or self._epoch.problem:
                        snapshot = await self._registry.snapshot()
                        await self._apply(snapshot)
                    else:
                        await self._reconcile()
                    self.health.set("registry", self._epoch.problem)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.health.fail("registry", f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(1.0)

    async def _apply(self, snapshot: Any) -> None:
        if (admitted := self._epoch.admit(snapshot, running=bool(self._specs))) == "hold":
            return  # an empty Redis is not "every query deleted" (docs/registry.md)
        specs, problems = specs_from_snapshot(snapshot)
        async with self._lock:
            if admitted == "replaced":  # Redis was replaced: every operator re-claims and checks its state
                await self._stop_ops(list(self._ops), released="Redis was replaced")
            old = self._specs
            self._specs, self._version = specs, snapshot.version
            if gone := set(old) - set(specs):
                await self._drop_queries({name: old[name] for name in gone})
            for name, spec in specs.items():
                if name in old and old[name].revision != spec.revision:
                    await self._forget({name})  # its output topic or partitions may differ now
                    await self._store.drop_query(name)  # re-keying restarts under a new incarnation tag
                    await self._rekeyers.redefined(old[name].query)  # the next sweep deletes what is unused
                    _log.info("query %s redefined (revision %d): state reset", name, spec.revision)
            self._status.retain(snapshot.queries)
            for name, problem in problems.items():
                self._status.problem(name, problem)
        if gone:  # one batch of topic deletions, off the lock, once the other workers stopped reading them
            self._background(self._rekeyers.sweep(after_s=2.0))
        await self._reconcile()
        self._applied = max(self._applied, snapshot.version)

    async def _drop_queries(self, gone: dict[str, QuerySpec]) -> None:
        """Tear deleted queries down together (operators stop at once, then the rest concurrently):
        one after another, 30 deletions held the lock 30 s and a revoke behind it (exit 75)."""
        layouts = {n: self._layouts.get(n) for n in gone}
        await self._forget(set(gone))

        async def drop(name: str) -> None:
            layout = layouts[name]  # its repartitioners' marks go too
            rekeyed = [(j.position_name, j.partition) for j in layout.jobs] if layout else []
            await self._positions.forget(name, range(layout.partitions if layout else 0), rekeyed)
            await self._rekeyers.drop(gone[name].query)
            self._factories.drop(name)
            _log.info("query %s deleted: dropped %d state keys", name, await self._store.drop_query(name))

        await asyncio.gather(*(drop(name) for name in sorted(gone)))

    async def _forget(self, names: set[str]) -> None:
        """Stop the operators and repartitioners of queries `names` (at once) and forget what was found
        about them (deleted or redefined)."""
        await self._stop_ops([k for k in self._ops if k[0] in names])
        await self._rekeyers.stop([k for k in self._rekeyers.running if k[0] in names])
        for name in names:
            self._status.forget(name)
            self._laid.forget(name)

    # -- assignment ---------------------------------------------------------------------------

    async def _on_revoked(self, sender: Any, revoked: Iterable[Any], **_: Any) -> None:
        """Hold what runs in the revoked slots (nothing of it in flight once this returns)."""
        lost = self._assignment.revoke(tp.partition for tp in revoked if tp.topic == SLOTS_TOPIC)
        async with self._lock:
            held = {k: op for k, op in self._ops.items() if not self._owned(k)}
            jobs = [k for k, r in self._rekeyers.running.items() if self._slot(r.job) in lost]
            stop = functools.partial(self._stop_ops, released="a rebalance")
            await hold(held, self._rekeyers, jobs, stop, self._publisher, self.config.operator)

    async def _on_assigned(self, sender: Any, assigned: Iterable[Any], **_: Any) -> None:
        """Release what was held and came back; the reconcile stops the rest and starts what is new."""
        self._assignment.assign(tp.partition for tp in assigned if tp.topic == SLOTS_TOPIC)
        owned = [op for key, op in self._ops.items() if self._owned(key)]
        kept = release(owned, self._rekeyers, self._jobs(self._assignment.owns))
        _log.info("assigned %d slots, kept %d operators", len(self._assignment.slots), kept)
        self._kick()

    def _kick(self) -> None:
        """Reconcile soon, in a task (failures are logged; the heartbeat reconciles again)."""

        async def run() -> None:
            try:
                await self._reconcile()
            except Exception as exc:
                self.health.fail("reconcile", f"{type(exc).__name__}: {exc}")
            else:
                self.health.ok("reconcile")

        self._background(run())

    def _owned(self, key: OpKey) -> bool:
        n = self._partitions.get(key[0])
        return n is not None and self._assignment.owns(slot_of(*key, n, self.config.slots))

    def _slot(self, job: RekeyJob) -> int:
        return slot_of(job.query.name, job.partition, job.partitions, self.config.slots)

    def _jobs(self, owns: Callable[[int], bool]) -> list[RekeyJob]:
        """Return the repartitioner jobs of the slots `owns` accepts."""
        return [
            job
            for name, layout in self._layouts.items()
            if name in self._specs and not self._specs[name].paused
            for job in layout.jobs
            if owns(self._slot(job))
        ]

    async def _reconcile(self) -> None:
        """Start the operators this worker should run and stop the others (those a rebalance holds
        stay, unless their query changed)."""
        async with self._lock:
            self._laid.want(self._specs)  # new queries: laid out in tasks, a few at a time
            want: dict[OpKey, QuerySpec] = {}  # owned, or held by a rebalance under way
            for name, spec in self._specs.items():
                for p in range(self._partitions[name]) if name in self._layouts else ():
                    op, rebalancing = self._ops.get((name, p)), self._assignment.rebalancing
                    if self._owned((name, p)) or (op is not None and op.held and rebalancing):
                        want[(name, p)] = spec
            stale = [
                k
                for k, op in self._ops.items()
                if k not in want or op.done or self._op_fingerprint[k] != want[k].fingerprint
            ]
            await self._stop_ops(stale)
            for key, spec in want.items():
                if key in self._ops:
                    self._ops[key].paused = spec.paused
                    continue
                self._start_op(key, spec)
            owns, holds = self._assignment.owns, self._assignment.holds
            await self._rekeyers.sync(self._jobs(owns), kept=self._jobs(holds))
        await self._sync_status()

    async def _lay_out(self, spec: QuerySpec) -> QueryLayout | str:
        assert self._meta is not None
        return await lay_out(spec, self._meta, self._kafka, self._rekeyers.store)

    def _start_op(self, key: OpKey, spec: QuerySpec) -> None:
        rekey, outputs = self._layouts[spec.name].rekey, self._layouts[spec.name].outputs
        assert self._publisher is not None
        op = PartitionOperator(
            self._factories.factory(spec.query),
            key[1],
            outputs=outputs,
            kafka=self._kafka,
            store=self._store,
            publisher=self._publisher,
            owner=self.config.worker_id,
            health=self.health,
            config=self.config.operator,
            on_status=self._on_status,
            positions=self._positions.keeper(*key, spec.incarnation, self._store, outputs),
            rekey=rekey,
        )
        op.paused = spec.paused
        self._ops[key] = op
        self._op_fingerprint[key] = spec.fingerprint
        op.start()

    async def _stop_ops(self, keys: list[OpKey], *, released: str | None = None) -> None:
        ops = [(k, self._ops.pop(k)) for k in keys if k in self._ops]
        await asyncio.gather(*(op.stop() for _, op in ops), return_exceptions=True)
        for key, _ in ops:
            self._op_fingerprint.pop(key, None)
            await self._status.dropped(*key, released=released, partitions=self._partitions.get(key[0]))

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run `coro` in a task the worker keeps a reference to (the loop only holds weak ones)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_status(self, query: str, partition: int, state: str) -> None:
        """An operator's state changed: report it (with every other change) soon."""
        self._background(self._sync_status())

    async def _sync_status(self) -> None:
        await self._status.sync(self._ops, self._partitions, self._version)

    # -- periodic jobs ------------------------------------------------------------------------

    async def _heartbeat(self) -> None:
        owned = {query: [p for q, p in self._ops if q == query] for query, _ in self._ops}
        await self._registry.heartbeat(
            self.config.worker_id, pid=os.getpid(), partitions=owned, started_at=self._started_at
        )
        # Also picks up what an earlier attempt could not do (topics missing, an operator that ended).
        self._kick()
        await self._lag.check(self._registry, self._applied, self.health)  # behind too long: not ready

    async def _probe_kafka(self) -> None:
        assert self._meta is not None
        await probe_kafka(self._meta)

    async def _publish_stats(self) -> None:
        await publish_stats(self._store, self._registry, list(self._ops.items()))

    async def _replan(self) -> None:
        await self._factories.replan(self._registry, [(q, op) for (q, _), op in self._ops.items()])
