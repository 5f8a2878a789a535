"""A query's trip through the registry: one `QueryRecord`, dumped once, parsed once per stored JSON.

The unit tests count the calls of `dump_query` and `parse_query` through the record's module (a spy
that counts, and calls the real function); the store tests use the real Redis and the in-memory log.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import pytest

import streamjoin.registry.query as record_module
from streamjoin.joiner.registry_follow.watch import QuerySpec
from streamjoin.query import QueryDef, parse_query
from streamjoin.registry import MemoryRegistryLog, QueryControls, QueryRecord, RegistryStore, StreamRecord
from streamjoin.registry.log import fold

_DEFINITION: dict[str, Any] = {
    "name": "q",
    "inputs": [
        {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 100}},
        {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"rows": 5}},
    ],
    "where": [["a.k", "=", "b.k"]],
    "output": {"topic": "q.out"},
}


_Logged = tuple[RegistryStore, MemoryRegistryLog, list[StreamRecord]]
"""A store, its log, and the streams a and b as registered."""


def _count(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the calls of the record module's `name` (`dump_query` or `parse_query`), still calling it."""
    calls = [0]
    real: Callable[..., Any] = getattr(record_module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(record_module, name, counted)
    return calls


def _query(evaluation_every: int | None = None) -> QueryDef:
    definition = dict(_DEFINITION)
    if evaluation_every is not None:
        definition["evaluation"] = {"mode": "lazy", "every": evaluation_every}
    return parse_query(definition)


def test_a_record_is_dumped_once_and_a_read_record_keeps_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    dumped = _count(monkeypatch, "dump_query")
    record = QueryRecord.of(_query(), at=1.0)
    stored = record.to_json()
    assert record.to_json() is stored and dumped == [1]
    read = QueryRecord.from_json("q", stored, QueryControls())
    assert read.query == record.query and read.to_json() is stored and dumped == [1]
    assert read.with_controls(QueryControls(paused=True)).to_json() is stored and dumped == [1]


def test_a_changed_record_is_dumped_anew() -> None:
    record = QueryRecord.of(_query(), at=1.0)
    record.to_json()
    assert json.loads(replace(record, revision=2).to_json())["revision"] == 2
    assert json.loads(replace(record, query=_query(7)).to_json())["definition"]["evaluation"]["every"] == 7


def test_a_known_record_read_from_the_same_text_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _count(monkeypatch, "parse_query")
    stored = QueryRecord.of(_query(), at=1.0).to_json()
    first = QueryRecord.from_json("q", stored, QueryControls())
    assert parsed == [1]
    paused = QueryControls(paused=True)
    again = QueryRecord.from_json("q", stored, paused, known=first)
    assert parsed == [1] and again.query is first.query and again.controls == paused
    changed = QueryRecord.of(_query(7), at=1.0).to_json()
    assert QueryRecord.from_json("q", changed, paused, known=first).query.evaluation.every == 7
    assert parsed == [2]


def test_the_worker_rebuilds_on_a_definition_or_control_change_not_on_a_pause() -> None:
    record = QueryRecord.of(_query(), at=1.0)
    spec = QuerySpec.of(record)
    assert QuerySpec.of(record.with_controls(replace(record.controls, paused=True))).fingerprint == (
        spec.fingerprint
    )
    reordered = record.with_controls(record.controls.with_changes({"order": ["b", "a"]}))
    assert QuerySpec.of(reordered).fingerprint != spec.fingerprint
    assert QuerySpec.of(replace(record, revision=2)).fingerprint != spec.fingerprint
    assert QuerySpec.of(replace(record, query=_query(7))).fingerprint != spec.fingerprint


@pytest.fixture
async def logged(redis_server: str) -> AsyncIterator[_Logged]:
    """A store on the real Redis with an in-memory log, on a fresh prefix, with streams a and b."""
    log = MemoryRegistryLog()
    prefix = f"test-{uuid.uuid4().hex[:10]}:streamjoin:"
    async with RegistryStore(redis_server, prefix=prefix, log=log) as store:
        await store.restore()  # an empty registry, with its epoch
        for name in ("a", "b"):
            await store.create_stream(StreamRecord(name, f"t.{name}", "ts"))
        snapshot = await store.snapshot()
        yield store, log, [snapshot.streams["a"], snapshot.streams["b"]]


@pytest.mark.anyio
async def test_redis_and_the_log_hold_the_one_json_of_the_record(
    logged: _Logged, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, log, streams = logged
    record = QueryRecord.of(_query(), at=1.0)
    dumped = _count(monkeypatch, "dump_query")
    await store.create_query(record, streams=streams)
    assert dumped == [1]
    stored = await store._redis.hget(store.keys.queries, "q")
    restored = fold(store.keys.prefix, await log.read())
    assert stored == record.to_json() == restored.queries["q"]
    replaced, _ = await store.replace_query(QueryRecord.of(_query(7), at=2.0), streams=streams)
    assert dumped == [2]
    assert await store._redis.hget(store.keys.queries, "q") == replaced.to_json()
    assert fold(store.keys.prefix, await log.read()).queries["q"] == replaced.to_json()


@pytest.mark.anyio
async def test_a_reader_parses_a_query_once_per_change_of_its_definition(
    logged: _Logged, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _, streams = logged
    await store.create_query(QueryRecord.of(_query(), at=1.0), streams=streams)
    parsed = _count(monkeypatch, "parse_query")
    first = await store.snapshot()
    assert parsed == [1]
    await store.set_controls("q", {"paused": True})
    paused = await store.snapshot()
    assert parsed == [1] and paused.queries["q"].controls.paused
    assert paused.queries["q"].query is first.queries["q"].query
    await store.replace_query(QueryRecord.of(_query(7), at=2.0), streams=streams)
    replaced = await store.snapshot()
    assert parsed == [2] and replaced.queries["q"].query.evaluation.every == 7
