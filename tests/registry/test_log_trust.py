"""The registry's log is not trusted blindly: a restore takes only authentic records of entities.

Records appended to the log by anything but the control plane (no MAC, a wrong MAC, not JSON, an
entity the control plane would refuse) are skipped with their reason, never fatal and never an
entity; a log written before it was signed is re-signed from Redis while Redis still holds it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

import pytest

from streamjoin.query import parse_query
from streamjoin.registry import (
    LogEntry,
    LogSigner,
    MemoryRegistryLog,
    QueryRecord,
    RegistryStore,
    StreamRecord,
)
from streamjoin.registry.log import fold

pytestmark = pytest.mark.anyio

KEY = b"registry-log-test-key-0123456789abcdef"


def _query(name: str, *, within: float | None = None) -> QueryRecord:
    definition: dict[str, Any] = {
        "name": name,
        "inputs": [
            {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 100}},
            {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"rows": 5}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": f"{name}.out"},
    }
    if within is not None:
        definition["within"] = [["a", "b", within]]
    return QueryRecord.of(parse_query(definition), at=1.0)


def _prefix() -> str:
    return f"test-{uuid.uuid4().hex[:10]}:streamjoin:"


async def _lose_everything(store: RegistryStore) -> None:
    keys = [k async for k in store._redis.scan_iter(match=f"{store.keys.prefix}*")]
    if keys:
        await store._redis.delete(*keys)


async def _register(store: RegistryStore) -> None:
    await store.restore()
    a, b = StreamRecord("a", "t.a", "ts"), StreamRecord("b", "t.b", "ts")
    await store.create_stream(a)
    await store.create_stream(b)
    await store.create_query(_query("q"), streams=[a, b])
    await store.set_controls("q", {"paused": True})


def _entry_of(store: RegistryStore, record: QueryRecord) -> LogEntry:
    return LogEntry.query(store.keys.prefix, record.name, record.to_json(), record.controls.to_hash())


@pytest.fixture
async def signed(redis_server: str) -> AsyncIterator[RegistryStore]:
    """A store with a key and an in-memory log, the registry holding streams a, b and a paused query q."""
    store = RegistryStore(redis_server, prefix=_prefix(), log=MemoryRegistryLog(), signer=LogSigner(KEY))
    async with store:
        await _register(store)
        yield store


def _log(store: RegistryStore) -> MemoryRegistryLog:
    log = store._log
    assert isinstance(log, MemoryRegistryLog)
    return log


async def test_forged_and_corrupt_records_are_refused_with_their_reason(signed: RegistryStore) -> None:
    before = await signed.snapshot()
    prefix = signed.keys.prefix
    signer = LogSigner(KEY)
    forged = _entry_of(signed, _query("forged")).at(10**9)  # a version above everything: ignored too
    log = _log(signed)
    log.entries += [
        forged,  # no MAC
        replace(forged, key=f"{prefix}query:forged2", mac="00" * 32),  # a MAC, not ours
        LogEntry.tombstone(prefix, "query", "q").at(10**9),  # an unsigned delete of a real query
        signer.sign(LogEntry(f"{prefix}query:garbage", "not json {", 2)),  # signed, but no entity
        signer.sign(LogEntry(f"{prefix}table:x", '{"kind": "stream"}', 2)),  # no stream or query key
        signer.sign(_entry_of(signed, _query("huge", within=1e30)).at(2)),  # signed, refused by the check
        LogEntry("other:query:x", "not json", 3),  # another registry's record: not ours to judge
    ]

    class Refuse:
        """The control plane's check, reduced to what this test needs: a bound on `within`."""

        def stream(self, stream: StreamRecord) -> None:
            pass

        def query(self, query: QueryRecord, streams: Mapping[str, StreamRecord]) -> None:
            if any(pair.bound > 10**6 for pair in query.query.within):
                raise ValueError("within: the estimated state is over the budget")

    await _lose_everything(signed)
    restored = await signed.restore(check=Refuse())
    assert restored is not None
    reasons = {(r.key.removeprefix(prefix), r.reason) for r in restored.refused}
    assert reasons == {
        ("query:forged", "unsigned"),
        ("query:forged2", "bad_signature"),
        ("query:q", "unsigned"),
        ("query:garbage", "malformed"),
        ("table:x", "malformed"),
        ("query:huge", "invalid"),
    }
    after = await signed.snapshot()
    assert after.streams == before.streams and after.queries == before.queries  # q paused, as it was
    assert after.version == before.version + 1  # the forged version did not count
    # the restore re-signed what the log did not vouch for: the next one refuses nothing
    assert not fold(prefix, log.entries, signer).unsettled
    await _lose_everything(signed)
    again = await signed.restore(check=Refuse())
    assert again is not None and again.refused == ()
    assert (await signed.snapshot()).queries == before.queries


async def test_a_log_without_a_key_still_skips_what_is_no_entity(redis_server: str) -> None:
    async with RegistryStore(redis_server, prefix=_prefix(), log=MemoryRegistryLog()) as store:
        await _register(store)
        before = await store.snapshot()
        _log(store).entries.append(LogEntry(f"{store.keys.prefix}stream:a", "\x00 not json", 99))
        await _lose_everything(store)
        restored = await store.restore()
        assert restored is not None and [r.reason for r in restored.refused] == ["malformed"]
        assert (await store.snapshot()).queries == before.queries


async def test_a_log_written_without_a_key_is_refused_until_resealed(redis_server: str) -> None:
    prefix, log = _prefix(), MemoryRegistryLog()
    async with RegistryStore(redis_server, prefix=prefix, log=log) as old:  # a version that did not sign
        await _register(old)
        before = await old.snapshot()
    keyed = RegistryStore(redis_server, prefix=prefix, log=log, signer=LogSigner(KEY))
    async with keyed:
        unsigned = len(log.entries)
        # Redis still holds the registry: the new version re-signs what the log cannot vouch for
        assert await keyed.seal() == 3  # streams a, b and query q
        assert await keyed.seal() == 0  # once
        assert all(e.mac is None for e in log.entries[:unsigned])
        assert fold(prefix, log.entries, LogSigner(KEY)).queries.keys() == {"q"}
        await _lose_everything(keyed)
        restored = await keyed.restore()
        assert restored is not None
        assert restored.refused == ()  # the old records are superseded by their re-signed copies
        after = await keyed.snapshot()
        assert after.streams == before.streams and after.queries == before.queries


async def test_a_forged_record_is_overwritten_by_the_seal(signed: RegistryStore) -> None:
    prefix = signed.keys.prefix
    log = _log(signed)
    log.entries += [
        _entry_of(signed, _query("forged")).at(3),  # a query Redis never had
        LogEntry.tombstone(prefix, "stream", "a").at(3),  # a delete Redis never saw
    ]
    assert await signed.seal() == 2
    state = fold(prefix, log.entries, LogSigner(KEY))
    assert not state.unsettled
    assert set(state.streams) == {"a", "b"} and set(state.queries) == {"q"}
    last = {e.key: e for e in log.entries}
    assert last[f"{prefix}query:forged"].value is None  # a signed tombstone: Redis does not hold it


async def test_no_seal_while_redis_is_behind_its_log(signed: RegistryStore) -> None:
    _log(signed).entries.append(_entry_of(signed, _query("forged")).at(3))
    await signed._redis.set(signed.keys.version, 1)  # a rolled-back Redis: the restore must catch it up
    assert await signed.seal() == 0
