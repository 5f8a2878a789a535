"""How a worker lays a query out on Kafka: its partitioning plan, topics, and what each operator and
repartitioner reads (docs/joiner.md, "Re-keyed inputs").

From the partition counts of the query's topics the worker computes the `PartitioningPlan`
(`streamjoin.query.partitioning`), creates the output and dead-letter topics and one internal topic
per re-keyed input with the plan's N partitions, and keeps the result as a `QueryLayout`: how its
operators read the re-keyed inputs, and the source partitions a repartitioner runs for.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

from streamjoin.joiner.layout.topic_setup import ensure_internal_topics, ensure_output_topics
from streamjoin.joiner.publish.output_topics import OutputTopics
from streamjoin.joiner.registry_follow.watch import QuerySpec
from streamjoin.joiner.rekeyed.format import generation
from streamjoin.joiner.rekeyed.reader import RekeyedInput, RekeySetup
from streamjoin.joiner.repartition.repartitioner import RekeyJob, position_name
from streamjoin.kafka import Consumer, KafkaClients, partition_counts
from streamjoin.query.model import QueryDef
from streamjoin.query.partitioning import PartitioningPlan, plan_partitioning
from streamjoin.state.redis.repartition_store import RepartitionStore

__all__ = [
    "DEFAULT_DEAD_LETTER",
    "QueryLayout",
    "lay_out",
    "status_note",
    "unsupported_rekeying",
]

DEFAULT_DEAD_LETTER = "streamjoin.dead-letter"


@dataclass(frozen=True, slots=True)
class QueryLayout:
    """A query as laid out on Kafka by its partitioning plan."""

    plan: PartitioningPlan
    outputs: OutputTopics
    rekey: RekeySetup | None
    """How operators read the re-keyed inputs (None: every input is read directly)."""
    jobs: tuple[RekeyJob, ...]
    """One per (re-keyed input, source partition)."""

    @property
    def partitions(self) -> int:
        """Return N, the query's operator partitions."""
        return self.plan.partitions


def status_note(plan: PartitioningPlan) -> str | None:
    """Return what the query status says of the re-keyed inputs (None when there are none)."""
    if not plan.rekeyed:
        return None
    parts = [f"{r.stream} ({r.reason}) via {r.internal_topic}" for r in plan.rekeyed]
    single = "; single partition" if plan.single_partition else ""
    return f"repartitioned: {', '.join(parts)}{single}"


async def lay_out(
    spec: QuerySpec, meta: Consumer, kafka: KafkaClients, store: RepartitionStore
) -> QueryLayout | str:
    """Return the layout of `spec`, creating its topics; or the problem that stops it (a topic missing)."""
    counts = await partition_counts(meta, kafka, spec.topics)
    if len(counts) < len(spec.topics):
        return f"input topic(s) {sorted(set(spec.topics) - set(counts))} missing"
    query = spec.query
    plan = plan_partitioning(query, counts)
    n = plan.partitions
    unsupported = unsupported_rekeying(query, plan)
    if unsupported is not None:
        return unsupported
    dead = query.dead_letter_topic or DEFAULT_DEAD_LETTER
    created = await asyncio.to_thread(ensure_output_topics, kafka, query.output_topic, dead, n)
    outputs = OutputTopics(query.output_topic, created[0], dead, created[1], n)
    rekeyed = [(r, r.internal_topic) for r in plan.rekeyed if r.internal_topic is not None]
    if not rekeyed:
        return QueryLayout(plan, outputs, None, ())
    gen = generation(spec.created_at, spec.revision)
    busy = await store.record_topics(spec.name, gen.decode(), [t for _, t in rekeyed])  # before creating
    if busy:  # an earlier incarnation's, a sweep deletes them now: created again on the next try
        return f"waiting for the deletion of internal topics {', '.join(busy)} (an earlier definition's)"
    problem = await asyncio.to_thread(ensure_internal_topics, kafka, [t for _, t in rekeyed], n)
    if (
        problem is not None
    ):  # left by an earlier definition: the sweep deletes them, the next try creates them
        await store.record_topics(spec.name, "", [t for _, t in rekeyed])
        return problem
    inputs = tuple(RekeyedInput(r.stream, r.topic, t, counts[r.topic]) for r, t in rekeyed)
    sources = [(position_name(gen, i.stream), s) for i in inputs for s in range(i.sources)]
    keys = [(i.stream, s) for i in inputs for s in range(i.sources)]

    async def repartitioned() -> dict[tuple[str, int], int | None]:
        return dict(zip(keys, await store.positions(spec.name, sources), strict=True))

    setup = RekeySetup(inputs, gen, functools.partial(store.positioned, spec.name, sources), repartitioned)
    jobs = tuple(
        RekeyJob(query, r.stream, r.topic, s, r.attribute, t, n, gen)
        for r, t in rekeyed
        for s in range(counts[r.topic])
    )
    return QueryLayout(plan, outputs, setup, jobs)


def unsupported_rekeying(query: QueryDef, plan: PartitioningPlan) -> str | None:
    """Return why `plan` cannot run, or None: an Avro input re-keyed across several partitions (the
    repartitioner routes by the record's JSON value, so every Avro record would stay in its source
    partition's place and matches across source partitions would be missed)."""
    avro = [
        r.stream
        for r in plan.rekeyed
        if r.attribute is not None
        and plan.partitions > 1
        and query.inputs[query.input_index(r.stream)].format == "avro"
    ]
    if not avro:
        return None
    return (
        f"input(s) {avro} are Avro and would be re-keyed across {plan.partitions} partitions, which is"
        " not supported yet: key their producers by the join attribute and declare it as the stream's key"
    )
