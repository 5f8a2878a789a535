"""The registry's durable log: every change reaches it before Redis, and a Redis that lost the
registry is refused (never read as "no queries") until `restore` has rebuilt it from the log."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from tests.registry.redis_process import RestartableRedis

from streamjoin.kafka import KafkaClients
from streamjoin.query import parse_query
from streamjoin.registry import (
    AlreadyExistsError,
    InUseError,
    KafkaRegistryLog,
    LogEntry,
    MemoryRegistryLog,
    NotFoundError,
    QueryRecord,
    RegistryStore,
    RegistryUnavailableError,
    StreamRecord,
)
from streamjoin.registry.log import fold

pytestmark = pytest.mark.anyio

STREAMS = ["a", "b", "c", "d"]
QUERIES = ["q1", "q2", "q3", "q4", "q5"]
_OPS = ["stream+", "stream-", "query+", "query-", "put", "control", "pause"]
_WEIGHTS = [3, 2, 4, 1, 2, 2, 2]


def _query(name: str, left: str, right: str, every: int | None = None) -> QueryRecord:
    definition: dict[str, Any] = {
        "name": name,
        "inputs": [
            {"stream": left, "topic": f"t.{left}", "timestamp": "ts", "window": {"range": 100}},
            {"stream": right, "topic": f"t.{right}", "timestamp": "ts", "window": {"rows": 5}},
        ],
        "where": [[f"{left}.k", "=", f"{right}.k"]],
        "output": {"topic": f"{name}.out"},
    }
    if every is not None:
        definition["evaluation"] = {"mode": "lazy", "every": every}
    return QueryRecord.of(parse_query(definition), at=1.0)


@pytest.fixture
async def durable(redis_server: str) -> AsyncIterator[RegistryStore]:
    """A store with an in-memory log on a fresh prefix, restored once (an empty registry)."""
    prefix = f"test-{uuid.uuid4().hex[:10]}:streamjoin:"
    async with RegistryStore(redis_server, prefix=prefix, log=MemoryRegistryLog()) as store:
        yield store


async def _lose_everything(store: RegistryStore) -> None:
    """What a Redis restarted without persistence holds of the registry: nothing."""
    keys = [k async for k in store._redis.scan_iter(match=f"{store.keys.prefix}*")]
    if keys:
        await store._redis.delete(*keys)


async def _random_changes(store: RegistryStore, rng: random.Random, steps: int) -> None:
    """Apply `steps` random catalog changes; refused ones (duplicates, in use, missing) are expected."""
    for _ in range(steps):
        op = rng.choices(_OPS, weights=_WEIGHTS)[0]
        name = rng.choice(QUERIES)
        try:
            snapshot = await store.snapshot()
            if op == "stream+":
                s = rng.choice(STREAMS)
                await store.create_stream(
                    StreamRecord(s, f"t.{s}", "ts", created_at=float(rng.randint(1, 9)))
                )
            elif op == "stream-":
                await store.delete_stream(rng.choice(STREAMS))
            elif op in ("query+", "put"):
                if len(snapshot.streams) < 2:
                    continue
                left, right = rng.sample(sorted(snapshot.streams), 2)
                streams = [snapshot.streams[left], snapshot.streams[right]]
                record = _query(name, left, right, rng.choice([None, 10, 20]))
                if op == "query+":
                    await store.create_query(record, streams=streams)
                else:
                    await store.replace_query(record, streams=streams)
            elif op == "query-":
                await store.delete_query(name)
            elif op == "control":
                await store.set_controls(name, {"expiration": {"mode": "lazy", "every": rng.randint(1, 50)}})
            else:
                await store.set_controls(name, {"paused": rng.random() < 0.5})
        except (AlreadyExistsError, InUseError, NotFoundError):
            pass


@pytest.mark.parametrize("seed", range(4))
async def test_a_registry_lost_by_redis_comes_back_from_the_log(durable: RegistryStore, seed: int) -> None:
    with pytest.raises(RegistryUnavailableError):  # never initialised: not "no queries" either
        await durable.snapshot()
    first = await durable.restore()
    assert first is not None and (first.streams, first.queries) == (0, 0)
    await _random_changes(durable, random.Random(seed), 60)
    if not (await durable.snapshot()).queries:  # a walk that ended empty still restores something
        x, y = StreamRecord("x", "t.x", "ts"), StreamRecord("y", "t.y", "ts")
        await durable.create_stream(x)
        await durable.create_stream(y)
        await durable.create_query(_query("anchor", "x", "y"), streams=[x, y])
    before = await durable.snapshot()

    await _lose_everything(durable)
    assert await durable.epoch() is None
    for read in (
        durable.snapshot(),
        durable.get_query("q1"),
        durable.get_stream("a"),
        durable.list_queries(),
    ):
        with pytest.raises(RegistryUnavailableError):
            await read
    log = durable._log
    assert isinstance(log, MemoryRegistryLog)
    logged = len(log.entries)
    with pytest.raises(RegistryUnavailableError):
        await durable.create_stream(StreamRecord("e", "t.e", "ts"))
    with pytest.raises(RegistryUnavailableError):
        await durable.delete_query("q1")
    assert len(log.entries) == logged  # refused before the log: nothing to restore later

    restored = await durable.restore()
    assert restored is not None and restored.reason == "Redis has no registry"
    after = await durable.snapshot()
    assert after.streams == before.streams
    assert after.queries == before.queries  # definitions, revisions, timestamps and controls
    assert after.version > before.version and after.epoch not in (None, before.epoch)
    assert await durable.restore() is None  # restored once; then it is a no-op


async def test_deleted_entities_stay_deleted(durable: RegistryStore) -> None:
    await durable.restore()
    a, b = StreamRecord("a", "t.a", "ts"), StreamRecord("b", "t.b", "ts")
    await durable.create_stream(a)
    await durable.create_stream(b)
    await durable.create_stream(StreamRecord("c", "t.c", "ts"))
    await durable.create_query(_query("keep", "a", "b"), streams=[a, b])
    await durable.create_query(_query("gone", "a", "b"), streams=[a, b])
    await durable.set_controls("keep", {"paused": True, "order": ["b", "a"]})
    await durable.delete_query("gone")
    await durable.delete_stream("c")

    await _lose_everything(durable)
    await durable.restore()
    snapshot = await durable.snapshot()
    assert set(snapshot.streams) == {"a", "b"} and set(snapshot.queries) == {"keep"}
    keep = snapshot.queries["keep"]
    assert keep.controls.paused is True and keep.controls.order == ("b", "a")
    assert await durable.get_query("gone") is None


async def test_redis_that_lost_acknowledged_changes_is_caught_up(durable: RegistryStore) -> None:
    """An old snapshot (RDB) or a lost last second (AOF everysec, host crash) still has an epoch."""
    await durable.restore()
    a, b = StreamRecord("a", "t.a", "ts"), StreamRecord("b", "t.b", "ts")
    await durable.create_stream(a)
    await durable.create_stream(b)
    await durable.create_query(_query("q", "a", "b"), streams=[a, b])
    before = await durable.snapshot()
    # roll Redis back to before the query was registered
    await durable._redis.hdel(durable.keys.queries, "q")
    await durable._redis.delete(durable.keys.control("q"))
    await durable._redis.set(durable.keys.version, before.version - 1)
    assert await durable.restore() is None  # the epoch is there: only the start-up check sees it
    restored = await durable.restore(check_log=True)
    assert restored is not None and "its log at" in restored.reason
    assert (await durable.snapshot()).queries == before.queries


class _BrokenLog(MemoryRegistryLog):
    async def append(self, entries: Sequence[LogEntry]) -> None:
        raise ConnectionError("broker unreachable")


async def test_a_write_the_log_did_not_take_changes_nothing(redis_server: str) -> None:
    prefix = f"test-{uuid.uuid4().hex[:10]}:streamjoin:"
    async with RegistryStore(redis_server, prefix=prefix, log=_BrokenLog()) as store:
        await store.restore()
        version = await store.version()
        with pytest.raises(RegistryUnavailableError, match="broker unreachable"):
            await store.create_stream(StreamRecord("a", "t.a", "ts"))
        assert await store.list_streams() == [] and await store.version() == version
        assert await store._redis.get(store.keys.writer) is None  # the lock is released


async def test_the_kafka_log_keeps_order_tombstones_and_prefixes(
    kafka_broker: str, make_topic: Any, redis_server: str
) -> None:
    topic = make_topic("registry", partitions=1, config={"cleanup.policy": "compact"})
    log = KafkaRegistryLog(KafkaClients(kafka_broker), topic)
    try:
        mine, other = "p1:", "p2:"
        await log.append(
            [
                LogEntry.stream(mine, "a", '{"a":1}').at(1),
                LogEntry.stream(other, "a", '{"other":1}').at(1),
                LogEntry.query(mine, "q", '{"q":1}', {"paused": "true"}).at(2),
                LogEntry.stream(mine, "a", '{"a":2}').at(3),
            ]
        )
        await log.append([LogEntry.tombstone(mine, "query", "q").at(4)])
        entries = await log.read()
        assert [e.version for e in entries] == [1, 1, 2, 3, 4]
        state = fold(mine, entries)
        assert (state.streams, state.queries, state.version) == ({"a": '{"a":2}'}, {}, 4)
        assert fold(other, entries).streams == {"a": '{"other":1}'}
    finally:
        log.close()
    missing = f"missing-{uuid.uuid4().hex}"
    assert await KafkaRegistryLog(KafkaClients(kafka_broker), missing).read() == []
    with pytest.raises(LookupError, match="does not exist"):
        await KafkaRegistryLog(KafkaClients(kafka_broker), missing, require_topic=True).read()


async def test_persistence_names_the_setting(redis_server: str, tmp_path: Any) -> None:
    async with RegistryStore(redis_server) as store:
        assert await store.persistence() == "none"  # the embedded Redis of the tests
    server = RestartableRedis(tmp_path)
    server.start()
    try:
        async with RegistryStore(server.url) as store:
            assert await store.persistence() == "aof-always"
            await store._redis.config_set("appendfsync", "everysec")
            assert await store.persistence() == "aof-everysec"
            await store._redis.config_set("appendonly", "no")
            await store._redis.config_set("save", "60 1000")
            assert await store.persistence() == "rdb"
    finally:
        server.stop()


async def test_concurrent_writers_leave_the_log_equal_to_redis(redis_server: str) -> None:
    """Two control planes racing on one query: the log's last record of each key is what Redis holds."""
    prefix = f"test-{uuid.uuid4().hex[:10]}:streamjoin:"
    log = MemoryRegistryLog()
    async with (
        RegistryStore(redis_server, prefix=prefix, log=log) as one,
        RegistryStore(redis_server, prefix=prefix, log=log) as two,
    ):
        await one.restore()
        a, b = StreamRecord("a", "t.a", "ts"), StreamRecord("b", "t.b", "ts")
        await one.create_stream(a)
        await two.create_stream(b)
        await one.create_query(_query("q", "a", "b"), streams=[a, b])

        async def writes(store: RegistryStore, every: int) -> None:
            for i in range(15):
                await store.set_controls("q", {"expiration": {"mode": "lazy", "every": every + i}})
                await store.set_controls("q", {"paused": i % 2 == 0})

        await asyncio.gather(writes(one, 100), writes(two, 200))
        before = await one.snapshot()
        state = fold(prefix, log.entries)
        assert state.version == before.version
        assert [e.version for e in log.entries] == sorted(e.version for e in log.entries)
        await _lose_everything(one)
        await two.restore()
        assert (await one.snapshot()).queries == before.queries
