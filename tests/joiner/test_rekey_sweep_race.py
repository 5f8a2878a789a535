"""The sweep of unused internal topics never deletes the topic of a query deleted and registered
again under its name while the sweep runs (`repartition.cleanup`: the deletion mark in the ledger)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from tests.joiner.harness import register_query

from streamjoin.joiner.repartition.cleanup import MARK_TTL_MS, InternalTopics
from streamjoin.kafka import KafkaClients
from streamjoin.query.partitioning import repartition_topic
from streamjoin.registry import RegistryStore
from streamjoin.state.redis.repartition_store import RepartitionStore
from streamjoin.topics import TopicSpec, broker_topics, create_topics

pytestmark = pytest.mark.integration


class _RegisteredAgainDuringTheSweep(RegistryStore):
    """A registry whose snapshot, once read, is followed by `meanwhile` (what another worker does
    between the sweep's registry read and its delete)."""

    meanwhile: Callable[[], Any] | None = None

    async def snapshot(self) -> Any:
        snapshot = await super().snapshot()
        if self.meanwhile is not None:
            await self.meanwhile()
        return snapshot


def _sweep(
    kafka_broker: str, redis_server: str, make_topic: Callable[..., str], *, race: bool
) -> tuple[list[str], bool, dict[str, tuple[str, str]]]:
    """Leave query q's internal topic of an earlier incarnation (q deleted), sweep, and, with `race`,
    register q again (its layout records the same topic) while the sweep runs. Return what the sweep
    deleted, whether the topic still exists, and the ledger."""
    name = f"sr{random.randrange(10**8)}"
    prefix = f"t{name}:"
    internal = repartition_topic(name, "b")
    (created,) = create_topics(kafka_broker, [TopicSpec(internal, "internal", 2)])
    assert created.ok, created

    async def run() -> tuple[list[str], dict[str, tuple[str, str]]]:
        a, b = make_topic("sr.a", partitions=2), make_topic("sr.b", partitions=2)
        await register_query(redis_server, prefix, {  # the registry must hold something: a known epoch
            "name": f"other{name}", "output": {"topic": a}, "where": [["a.k", "=", "b.k"]],
            "inputs": [{"stream": s, "topic": t, "timestamp": "ts", "key": "k", "window": {"range": 60}}
                       for s, t in (("a", a), ("b", b))],
        })  # fmt: skip
        store = RepartitionStore(redis_server, prefix=prefix)
        registry = _RegisteredAgainDuringTheSweep(redis_server, prefix=prefix)
        try:
            await store.record_topics(name, "1000.1", [internal])  # the deleted incarnation's
            if race:
                registry.meanwhile = lambda: store.record_topics(name, "2000.1", [internal])
            deleted = await InternalTopics(KafkaClients(kafka_broker), store, registry).sweep()
            return deleted, await store.ledger()
        finally:
            await store.aclose()
            await registry.aclose()

    deleted, ledger = asyncio.run(run())
    return (
        deleted,
        internal in broker_topics(kafka_broker),
        {t: e for t, e in ledger.items() if t == internal},
    )


def test_the_sweep_deletes_a_deleted_querys_topic(
    kafka_broker: str, redis_server: str, make_topic: Callable[..., str]
) -> None:
    deleted, exists, ledger = _sweep(kafka_broker, redis_server, make_topic, race=False)
    assert len(deleted) == 1 and not exists and ledger == {}


def test_a_query_registered_again_during_the_sweep_keeps_its_topic(
    kafka_broker: str, redis_server: str, make_topic: Callable[..., str]
) -> None:
    deleted, exists, ledger = _sweep(kafka_broker, redis_server, make_topic, race=True)
    assert deleted == [] and exists
    assert [gen for _, gen in ledger.values()] == ["2000.1"]  # the new incarnation's entry


def test_a_layout_waits_while_a_sweep_deletes_its_topic(redis_server: str) -> None:
    """The mark refuses a new incarnation's record until the sweep removes it or it expires."""

    async def run() -> list[Any]:
        store = RepartitionStore(redis_server, prefix=f"m{random.randrange(10**8)}:")
        try:
            seen: list[Any] = [await store.record_topics("q", "1.1", ["t1"])]
            seen.append(await store.mark_deleting("t1", "q", "0.1", "tok", MARK_TTL_MS))  # stale entry
            seen.append(await store.mark_deleting("t1", "q", "1.1", "tok", MARK_TTL_MS))
            seen.append(await store.mark_deleting("t1", "q", "1.1", "tok2", MARK_TTL_MS))  # one at a time
            seen.append(await store.record_topics("q", "2.1", ["t1", "t2"]))  # refused, nothing written
            seen.append(await store.ledger())
            await store.unmark_deleting("t1", "tok2")  # not its mark: stays
            seen.append(await store.record_topics("q", "2.1", ["t1"]))
            await store.unmark_deleting("t1", "tok")
            seen.append(await store.record_topics("q", "2.1", ["t1"]))
            assert await store.mark_deleting("t1", "q", "2.1", "tok3", 1)  # a crashed sweeper's mark ...
            time.sleep(0.01)
            seen.append(await store.record_topics("q", "3.1", ["t1"]))  # ... expires
            seen.append(await store.ledger())
            return seen
        finally:
            await store.aclose()

    seen = asyncio.run(run())
    assert seen == [
        [],
        False,
        True,
        False,
        ["t1"],
        {"t1": ("q", "1.1")},
        ["t1"],
        [],
        [],
        {"t1": ("q", "3.1")},
    ]
