"""`RedisStateStore` against the real embedded Redis: the window table shared by the queries of a topic.

A record is stored once per (topic, partition) however many queries (or inputs of one query) hold
it, and goes when the last holder expires it or is dropped; every query's checkpoint still reads
its own entries back whole.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, cast

import pytest

from streamjoin.engine.entry import Entry
from streamjoin.state.base import CommitBatch, FencedError
from streamjoin.state.redis import RedisStateStore, StateKeys
from streamjoin.state.redis.connect import RedisClient, connect

P = 2
TOPIC = "clicks"


def _entry(input_index: int, offset: int) -> Entry:
    return Entry(input_index, P, offset, 1_000 + offset, {"k": offset % 3, "i": offset}, size=20)


def _raw(offset: int) -> bytes:
    return b'{"k": %d, "i": %d}' % (offset % 3, offset)


def _run(test: Callable[[RedisStateStore, RedisClient], Coroutine[Any, Any, None]], url: str) -> None:
    async def run() -> None:
        store = RedisStateStore(url, prefix=f"t{uuid.uuid4().hex[:8]}:")
        r = connect(url)
        try:
            await test(store, r)
        finally:
            await store.aclose()
            await r.aclose()

    asyncio.run(run())


async def _commit(
    store: RedisStateStore,
    query: str,
    epoch: int,
    batch: int,
    topics: tuple[str, ...],
    added: list[Entry] = [],  # noqa: B006 (never mutated)
    expired: list[Entry] = [],  # noqa: B006
) -> None:
    await store.commit(
        query,
        P,
        epoch,
        CommitBatch(
            batch=batch,
            offsets={t: 100 for t in topics},
            scalars={},
            added=[(e, _raw(e.offset)) for e in added],
            expired=expired,
            topics=topics,
        ),
    )


Table = tuple[dict[int, bytes], dict[int, int]]


async def _table(store: RedisStateStore, r: RedisClient, topic: str = TOPIC) -> Table:
    """Return the shared table of `topic` on partition P: (offset -> bytes, offset -> references)."""
    k = store.keys("", P)
    raw = {int(f): cast(bytes, v) for f, v in (await r.hgetall(k.table(topic))).items()}
    counts = {int(f): int(v) for f, v in (await r.hgetall(k.table_counts(topic))).items()}
    assert set(counts) <= set(raw) and min(counts.values(), default=2) >= 2  # no count: one holder
    refs = {offset: counts.get(offset, 1) for offset in raw}
    return raw, refs


def test_two_queries_share_one_copy_until_both_expire(any_redis: str) -> None:
    async def test(store: RedisStateStore, r: RedisClient) -> None:
        one = (TOPIC, "other")
        e1 = await store.claim("q1", P, "w", one)
        e2 = await store.claim("q2", P, "w", (TOPIC,))
        q1 = [_entry(0, o) for o in range(5)] + [_entry(1, 7)]
        q2 = [_entry(0, o) for o in range(3, 8)]
        await _commit(store, "q1", e1.epoch, 1, one, added=q1)
        await _commit(store, "q2", e2.epoch, 1, (TOPIC,), added=q2)
        raw, refs = await _table(store, r)
        assert raw == {o: _raw(o) for o in range(8)}  # one copy each
        assert refs == {0: 1, 1: 1, 2: 1, 3: 2, 4: 2, 5: 1, 6: 1, 7: 1}
        assert (await _table(store, r, "other"))[1] == {7: 1}

        # q1 expires 0..4: what q2 still holds stays
        await _commit(store, "q1", e1.epoch, 2, one, expired=q1[:5])
        raw, refs = await _table(store, r)
        assert sorted(raw) == [3, 4, 5, 6, 7] and refs == {3: 1, 4: 1, 5: 1, 6: 1, 7: 1}
        # each query reads its own entries back, records from the shared table
        back = await store.claim("q2", P, "w2", (TOPIC,))
        assert sorted((e.offset, e.ts, e.record["i"]) for e in back.entries) == [
            (o, 1_000 + o, o) for o in range(3, 8)
        ]
        assert back.raws == {(0, o): _raw(o) for o in range(3, 8)}
        left = await store.claim("q1", P, "w2", one)
        assert [(e.input, e.offset) for e in left.entries] == [(1, 7)]
        assert left.raws == {(1, 7): _raw(7)}

        await _commit(store, "q2", back.epoch, 2, (TOPIC,), expired=q2)
        assert await _table(store, r) == ({}, {})

    _run(test, any_redis)


def test_a_self_join_holds_a_record_twice(any_redis: str) -> None:
    async def test(store: RedisStateStore, r: RedisClient) -> None:
        topics = (TOPIC, TOPIC)
        c = await store.claim("self", P, "w", topics)
        a, b = _entry(0, 4), _entry(1, 4)
        await _commit(store, "self", c.epoch, 1, topics, added=[a, b])
        assert await _table(store, r) == ({4: _raw(4)}, {4: 2})
        await _commit(store, "self", c.epoch, 2, topics, expired=[a])
        assert await _table(store, r) == ({4: _raw(4)}, {4: 1})
        back = await store.claim("self", P, "w", topics)
        assert [(e.input, e.offset) for e in back.entries] == [(1, 4)]
        await _commit(store, "self", back.epoch, 3, topics, expired=[b])
        assert await _table(store, r) == ({}, {})

    _run(test, any_redis)


def test_dropping_a_query_releases_its_references_only(any_redis: str) -> None:
    async def test(store: RedisStateStore, r: RedisClient) -> None:
        # "q:rec" extends the name "q" with what looks like one of its key suffixes
        names = ("q", "q:rec", "q2")
        claims = {n: await store.claim(n, P, "w", (TOPIC,)) for n in names}
        held = {"q": range(0, 6), "q:rec": range(4, 8), "q2": range(5, 9)}
        for n in names:
            await _commit(store, n, claims[n].epoch, 1, (TOPIC,), added=[_entry(0, o) for o in held[n]])
        assert (await _table(store, r))[1] == {0: 1, 1: 1, 2: 1, 3: 1, 4: 2, 5: 3, 6: 2, 7: 2, 8: 1}

        assert await store.drop_query("q") > 0
        raw, refs = await _table(store, r)
        assert refs == {4: 1, 5: 2, 6: 2, 7: 2, 8: 1} and sorted(raw) == [4, 5, 6, 7, 8]
        keys = [k.decode() async for k in r.scan_iter(match=store.prefix + "*")]
        assert not [k for k in keys if StateKeys.partition_of(store.prefix, "q", k) is not None]
        for n in ("q:rec", "q2"):  # the others are whole
            back = await store.claim(n, P, "w2", (TOPIC,))
            assert sorted(e.offset for e in back.entries) == list(held[n])
        # a zombie of the dropped query cannot write again
        with pytest.raises(FencedError):
            await _commit(store, "q", claims["q"].epoch, 2, (TOPIC,), added=[_entry(0, 9)])
        assert 9 not in (await _table(store, r))[1]
        # registered again under its name: the new owner's epoch is not the zombie's, so the
        # zombie's first batch cannot pass for the new incarnation's
        again = await store.claim("q", P, "w3", (TOPIC,))
        assert again.epoch != claims["q"].epoch and again.entries == []
        with pytest.raises(FencedError):
            await _commit(store, "q", claims["q"].epoch, 1, (TOPIC,), added=[_entry(0, 9)])
        assert 9 not in (await _table(store, r))[1]
        assert await store.drop_query("q") > 0

        await store.drop_query("q2")
        await store.drop_query("q:rec")
        await store.drop_query("q:rec")  # idempotent
        assert await _table(store, r) == ({}, {})
        # only the partition's epoch counter outlives the queries
        left = [k async for k in r.scan_iter(match=store.prefix + "*")]
        assert left == [StateKeys(store.prefix, "", P).epochs.encode()]

    _run(test, any_redis)


def test_keys_of_a_longer_name_are_not_the_shorter_ones() -> None:
    assert StateKeys.partition_of("p:", "q", StateKeys("p:", "q:rec", 1).meta) is None
    assert StateKeys.partition_of("p:", "q", StateKeys("p:", "q", 1).outbox("dead")) == 1
    assert StateKeys.partition_of("p:", "q:rec", StateKeys("p:", "q:rec", 1).records) == 1


def test_rekeyed_entries_keep_their_source_partition(any_redis: str) -> None:
    """Entries of a re-keyed input carry their source partition: equal offsets of two source
    partitions are two records, the operator's own partition shares the direct readers' table
    entry, and the duplicate filter (`sources`) is committed with the batch."""

    async def test(store: RedisStateStore, r: RedisClient) -> None:
        e = await store.claim("rk", P, "w", (TOPIC,))
        other = Entry(0, P + 1, 5, 1_000, {"k": 1, "i": 105}, size=20)
        mine = _entry(0, 5)  # source partition P: the same record a direct reader of P holds
        batch = CommitBatch(
            batch=1,
            offsets={"internal": 9},
            scalars={},
            added=[(other, b'{"k": 1, "i": 105}'), (mine, _raw(5))],
            topics=(TOPIC,),
            sources={"b:3": 5, "b:2": 5},
        )
        await store.commit("rk", P, e.epoch, batch)
        k = store.keys("", P)
        assert set(await r.hkeys(k.table(TOPIC))) == {b"5", b"%d.5" % (P + 1)}
        back = await store.claim("rk", P, "w2", (TOPIC,))
        assert sorted((x.partition, x.offset, x.record["i"]) for x in back.entries) == [
            (P, 5, 5),
            (P + 1, 5, 105),
        ]
        assert back.raws == {(0, 5): _raw(5), (0, 5, P + 1): b'{"k": 1, "i": 105}'}
        assert back.sources == {"b:3": 5, "b:2": 5}
        await _commit(store, "rk", back.epoch, 2, (TOPIC,), expired=[other])
        assert set(await r.hkeys(k.table(TOPIC))) == {b"5"}
        await store.drop_query("rk")  # releases the last reference
        assert await r.hkeys(k.table(TOPIC)) == []

    _run(test, any_redis)


def test_a_rewritten_entry_is_read_back_as_rewritten_and_keeps_its_record(any_redis: str) -> None:
    """A count window's shed record stays in the checkpoint with `passes` 0 (`CommitBatch.rewritten`):
    its header is stored again, its record bytes stay shared, and a deletion still removes both."""

    async def test(store: RedisStateStore, r: RedisClient) -> None:
        epoch = (await store.claim("q", P, "w", (TOPIC,))).epoch
        held = [_entry(0, o) for o in range(3)]
        for seq, e in enumerate(held, start=1):
            e.seq = seq
        await _commit(store, "q", epoch, 1, (TOPIC,), added=held)
        held[1].passes = False  # shed: it keeps its place in the count, it joins nothing
        batch = CommitBatch(batch=2, offsets={TOPIC: 100}, scalars={}, rewritten=[held[1]], topics=(TOPIC,))
        await store.commit("q", P, epoch, batch)
        back = await store.claim("q", P, "w2", (TOPIC,))
        got = {e.offset: (e.passes, e.seq, e.ts, e.record["i"]) for e in back.entries}
        assert got == {0: (True, 1, 1_000, 0), 1: (False, 2, 1_001, 1), 2: (True, 3, 1_002, 2)}
        assert (await _table(store, r))[0] == {o: _raw(o) for o in range(3)}
        await _commit(store, "q", back.epoch, 3, (TOPIC,), expired=held)
        assert await _table(store, r) == ({}, {})

    _run(test, any_redis)
