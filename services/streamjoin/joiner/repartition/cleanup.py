"""Deleting the internal repartition topics a query no longer uses, and their positions in Redis
(docs/partitioning.md, "Internal topics").

Every internal topic a worker creates is first listed in a ledger in Redis (`RepartitionStore`,
write-ahead: a crash between listing and creating leaves an entry, never an unlisted topic); a worker
that sees a query deleted or redefined lists the topics its earlier definition may have had. Any
worker then `sweep`s the ledger, on each such change and every 10 s (so a deletion made while every
worker was down, or that a crash interrupted, is finished by whoever runs next). An entry is
deleted, topic first and then the entry, when the registry (read afresh) no longer has its query,
or has another incarnation whose partitioning plan, over the topics' partition counts now, does not
re-key that input or re-keys it with another partition count (the layout then creates it again).
Workers laying the query out compute the same plan, so they only create what the sweep keeps;
deleting is idempotent, so several workers sweeping at once do no harm.

The registry may change between the sweep's read and its delete: a query deleted and registered
again under its name lays out the same topic names. So right before deleting a topic the sweep
marks it in Redis, atomically with checking that its ledger entry is still the (query, incarnation)
it judged unused (`RepartitionStore.mark_deleting`); a new incarnation records its topics (before
creating them) only while no mark is on them. Either the new incarnation recorded first (the mark
is refused and the topic kept), or it waits for the deletion and creates the topic again. A mark
outlives a crashed sweeper by `MARK_TTL_MS` at most.

A lagging worker that still reads or writes a deleted topic cannot bring it back: none of
streamjoin's clients asks the broker to create a topic (`streamjoin.kafka.no_autocreate`, and the
repartitioners' producer has `allow.auto.create.topics` off), and deleting a query's positions
fences its repartitioners (`RepartitionStore.check_owner`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Sequence

from streamjoin.joiner.registry_follow.watch import specs_from_snapshot
from streamjoin.joiner.rekeyed.format import generation
from streamjoin.kafka import Admin, KafkaClients
from streamjoin.query.model import QueryDef
from streamjoin.query.partitioning import plan_partitioning, repartition_topic
from streamjoin.registry import RegistryStore
from streamjoin.state.redis.repartition_store import RepartitionStore

__all__ = ["MARK_TTL_MS", "InternalTopics", "delete_internal_topics", "possible_internal_topics"]

_log = logging.getLogger(__name__)

MARK_TTL_MS = 90_000
"""How long a deletion mark holds off a new incarnation's layout: the delete request's own bound
(`Admin.delete_topics`, 30 s) three times over, so a live sweeper's mark never expires under it."""


class InternalTopics:
    """List, and delete when unused, the internal topics of a deployment's queries."""

    def __init__(self, kafka: KafkaClients, store: RepartitionStore, registry: RegistryStore) -> None:
        self._kafka = kafka
        self._store = store
        self._registry = registry
        self._lock = asyncio.Lock()

    async def retire(self, query: QueryDef, *, deleted: bool) -> None:
        """List what `query` (deleted, or the definition a redefinition replaced) may have left; a
        deleted query's repartitioners are fenced at once (their positions go)."""
        await self._store.record_topics(query.name, "", possible_internal_topics(query))
        if deleted:
            await self._store.drop(query.name)

    async def sweep(self) -> list[str]:
        """Delete every listed topic no registered query uses; return the topics deleted."""
        async with self._lock:  # one sweep at a time per worker (the heartbeat and a deletion)
            ledger = await self._store.ledger()
            if not ledger:
                return []
            snapshot = await self._registry.snapshot()
            if snapshot.epoch is None:
                return []  # Redis holds no registry: "no queries" is not known (docs/registry.md)
            specs, _ = specs_from_snapshot(snapshot)
            wanted = {t for s in specs.values() for t in s.topics} | set(ledger)
            counts = await _partition_counts(self._kafka, wanted)
            marked: list[tuple[str, str, str, str]] = []  # (topic, query, generation, mark token)
            for topic, (query, gen) in sorted(ledger.items()):
                spec = specs.get(query)
                if spec is None and query in snapshot.queries:
                    continue  # registered but unreadable: keep everything of it
                current = generation(spec.created_at, spec.revision).decode() if spec is not None else None
                if gen == current:
                    continue  # in use by the running incarnation
                if spec is not None:
                    if any(t not in counts for t in spec.topics):
                        continue  # its plan cannot be known yet
                    plan = plan_partitioning(spec.query, {t: counts[t] for t in spec.topics})
                    await self._store.drop_generations(query, keep=current or "")
                    needed = topic in {r.internal_topic for r in plan.rekeyed}
                    if needed and counts.get(topic, plan.partitions) == plan.partitions:
                        await self._store.record_topics(query, current or "", [topic])
                        continue  # kept for the new definition (one with another count is replaced)
                else:
                    await self._store.drop(query)
                token = uuid.uuid4().hex
                if await self._store.mark_deleting(topic, query, gen, token, MARK_TTL_MS):
                    marked.append((topic, query, gen, token))
                # else: a new incarnation recorded it since the ledger was read (or another sweep)
            deleted = await self._delete(marked)
            if deleted:
                _log.info("deleted internal topics no query uses: %s", ", ".join(deleted))
            return deleted

    async def _delete(self, marked: list[tuple[str, str, str, str]]) -> list[str]:
        """Delete the `marked` topics in one admin request (a flood's hundreds of topics are one
        round trip, not one each), then their ledger entries; unmark them in any case."""
        deleted: list[str] = []
        try:
            if marked:
                await asyncio.to_thread(delete_internal_topics, self._kafka, [m[0] for m in marked])
            for topic, query, gen, _ in marked:
                if await self._store.forget_topic(topic, query, gen):
                    deleted.append(topic)
        finally:
            for topic, _, _, token in marked:
                await self._store.unmark_deleting(topic, token)
        return deleted


async def _partition_counts(kafka: KafkaClients, topics: Iterable[str]) -> dict[str, int]:
    wanted = set(topics)
    if not wanted:
        return {}
    existing = await asyncio.to_thread(Admin(kafka.bootstrap, client_config=kafka.librdkafka).topics)
    return {t: n for t, n in existing.items() if t in wanted and n}


def possible_internal_topics(query: QueryDef) -> tuple[str, ...]:
    """Return the internal topic every input of `query` would have if re-keyed (what a deleted
    query may have left, whether or not this worker laid it out)."""
    return tuple(repartition_topic(query.name, i.stream) for i in query.inputs)


def delete_internal_topics(kafka: KafkaClients, names: Sequence[str]) -> None:
    """Delete a deleted query's internal topics (idempotent: a missing one is no error)."""
    if not names:
        return
    errors = Admin(kafka.bootstrap, client_config=kafka.librdkafka).delete_topics(names)
    for name, error in errors.items():
        if error is None:
            _log.info("deleted internal topic %s", name)
        elif "UNKNOWN_TOPIC" not in error.upper() and "does not exist" not in error:
            raise RuntimeError(f"deleting topic {name} failed: {error}")
