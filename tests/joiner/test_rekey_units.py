"""Re-keyed inputs in memory: the repartitioner's routing, the operator's duplicate filter and source
mapping, progress markers, and what a rows window of a re-keyed input counts."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from tests.kafka_records import ConsumerRecord, TopicPartition, consumer_record

from streamjoin.joiner.batch.builder import BatchBuilder, BuiltBatch
from streamjoin.joiner.rekeyed.format import (
    HEADER_GEN,
    HEADER_MARK,
    HEADER_SOURCE,
    load,
    mark_header,
    route,
    source_header,
)
from streamjoin.joiner.rekeyed.reader import RekeyedInput, RekeyedReader, RekeySetup
from streamjoin.operator import OperatorFactory
from streamjoin.query import parse_query
from streamjoin.query.partitioning import partition_for
from streamjoin.testing import Event, expected_results

GEN = b"1.1"
INTERNAL = "streamjoin.repartition.q.b"


async def _positioned() -> bool:
    return True


async def _repartitioned() -> dict[tuple[str, int], int | None]:
    return {}


def _query(b_window: dict[str, Any]) -> Any:
    return parse_query(
        {
            "name": "q",
            "inputs": [
                {"stream": "a", "topic": "t.a", "timestamp": "ts", "key": "k", "window": {"range": 100}},
                {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": b_window},
            ],
            "where": [["a.k", "=", "b.k"]],
            "output": {"topic": "out"},
        }
    )


Msg = ConsumerRecord[bytes, bytes]


# -- routing --------------------------------------------------------------------------------------


def test_route_sends_equal_values_to_one_partition_as_kafka_would() -> None:
    rng = random.Random(1)
    for _ in range(500):
        value = rng.choice([rng.randrange(-(10**9), 10**9), f"s{rng.randrange(1000)}", rng.random()])
        n = rng.randint(2, 12)
        partition, key = route({"x": value, "ts": 1}, "x", n, rng.randrange(8))
        assert partition == partition_for(value, n)
        assert key == (json.dumps(value).encode() if not isinstance(value, int) else b"%d" % value)
    # the engine joins 7 with 7.0: they must meet
    assert route({"x": 7.0}, "x", 5, 0) == route({"x": 7}, "x", 5, 3)


def test_route_keeps_unroutable_records_in_one_place_and_single_partition_in_zero() -> None:
    assert route(load(b"{not json"), "x", 4, 6) == (2, None)  # source partition 6 % 4
    nested = b'{"x": ' + b"[" * 5000 + b"]" * 5000 + b"}"  # too deep for orjson and for json
    assert route(load(nested), "x", 4, 6) == (2, None)
    assert route(load(b"[1, 2]"), "x", 4, 1) == (1, None)
    assert route({"y": 1}, "x", 3, 5) == (2, None)
    assert route({"x": {"nested": 1}}, "x", 4, 1)[0] == partition_for({"nested": 1}, 4)
    assert route({"x": 1}, None, 1, 3) == (0, None)  # single-partition plan
    assert route({"x": 1}, "x", 1, 3) == (0, None)


# -- the operator's reader ------------------------------------------------------------------------


def _record(s: int, offset: int, value: dict[str, Any], *, gen: bytes = GEN, internal_offset: int) -> Msg:
    headers = [(HEADER_GEN, gen), (HEADER_SOURCE, source_header(s, offset))]
    return consumer_record(INTERNAL, 0, internal_offset, json.dumps(value).encode(), headers=headers)


def _mark(s: int, ts: float, *, internal_offset: int) -> Msg:
    headers = [(HEADER_GEN, GEN), (HEADER_MARK, mark_header(s, ts))]
    return consumer_record(INTERNAL, 0, internal_offset, b"", headers=headers)


class Operator:
    """One operator partition (0) of `_query` whose input b is re-keyed from a 2-partition topic."""

    def __init__(self, b_window: dict[str, Any], committed: dict[str, int] | None = None) -> None:
        self.query = _query(b_window)
        setup = RekeySetup((RekeyedInput("b", "t.b", INTERNAL, 2),), GEN, _positioned, _repartitioned)
        self.builder = BatchBuilder(self.query, 0, "dead", internal_topics=setup.internal_topics)
        self.op = OperatorFactory(self.query, replan_every=None).build(0, journal=True, sources=setup.sources)
        self.observed: list[tuple[str, int, float]] = []
        engine = self.op.engine

        def observe(stream: str, partition: int, ts: float) -> None:
            self.observed.append((stream, partition, ts))
            engine.observe(stream, partition, ts)

        self.reader = RekeyedReader(
            setup,
            committed or {},
            observe=observe,
            set_idle=engine.set_idle,
            is_idle=engine.is_idle,
            idle_ms=60_000,
            now=0.0,
        )
        self.builder.rekeyed = self.reader
        self.offsets: dict[str, int] = {}
        self.batch = 0

    def send(self, *msgs: Msg) -> BuiltBatch:
        by_tp: dict[TopicPartition, list[Msg]] = {}
        for m in msgs:
            by_tp.setdefault(TopicPartition(m.topic, m.partition), []).append(m)
        self.batch += 1
        return self.builder.build(
            self.op, by_tp, batch=self.batch, offsets=self.offsets, trims=[], last_arrival={}, now=0.0
        )


def _ids(built: BuiltBatch) -> list[str]:
    return sorted(json.loads(r.value)["id"] for r in built.results)


def test_reader_presents_source_coordinates_and_drops_duplicates_across_a_crash() -> None:
    op = Operator({"range": 100})
    a = consumer_record("t.a", 0, 0, b'{"ts": 1, "k": 1}')
    first = op.send(
        a,
        _record(1, 10, {"ts": 2, "k": 1}, internal_offset=0),
        _record(0, 4, {"ts": 3, "k": 1}, internal_offset=1),
        _record(1, 11, {"ts": 4, "k": 1}, internal_offset=2),
        consumer_record("t.a", 0, 1, b'{"ts": 500, "k": 9}'),
        _mark(0, 500, internal_offset=3),
        _mark(1, 500, internal_offset=4),
    )
    assert _ids(first) == ["t.a:0:0|t.b:0:4", "t.a:0:0|t.b:1:10", "t.a:0:0|t.b:1:11"]  # source ids
    assert first.commit.sources == {"b:0": 4, "b:1": 11}
    assert first.commit.offsets == {"t.a": 2, INTERNAL: 5}
    assert first.records == 5  # markers are not records
    assert [o[:2] for o in op.observed] == [("b", 0), ("b", 1)]
    # the repartitioner of source partition 1 crashed before committing: it writes 10, 11 again,
    # then 12; another incarnation's leftover record is skipped too
    again = op.send(
        _record(1, 10, {"ts": 2, "k": 1}, internal_offset=5),
        _record(1, 11, {"ts": 4, "k": 1}, internal_offset=6),
        _record(0, 5, {"ts": 5, "k": 1}, internal_offset=7, gen=b"0.1"),
        _record(1, 12, {"ts": 6, "k": 1}, internal_offset=8),
    )
    assert again.records == 1 and op.reader.duplicates == 2
    assert again.commit.sources == {"b:1": 12}
    assert again.commit.offsets[INTERNAL] == 9
    # the operator itself restarts from its commit: the filter comes back with it
    restarted = Operator({"range": 100}, committed={**first.commit.sources, **again.commit.sources})
    built = restarted.send(_record(1, 12, {"ts": 6, "k": 1}, internal_offset=8))
    assert built.records == 0 and restarted.reader.duplicates == 1


def test_marker_moves_the_watermark_of_its_source_partition_only() -> None:
    op = Operator({"range": 100})
    op.send(consumer_record("t.a", 0, 0, b'{"ts": 50, "k": 1}'), _mark(0, 40, internal_offset=0))
    assert op.op.watermark == float("-inf")  # source partition 1 of b has said nothing yet
    op.send(_mark(1, 30, internal_offset=1))
    assert op.op.watermark == 30
    op.send(_mark(1, 45, internal_offset=2), _mark(1, 44, internal_offset=3))  # never backwards
    assert op.op.watermark == 40


def test_malformed_rekeyed_record_is_dead_lettered_once_with_its_source() -> None:
    op = Operator({"range": 100})
    bad = consumer_record(
        INTERNAL, 0, 0, b"{oops", headers=[(HEADER_GEN, GEN), (HEADER_SOURCE, source_header(1, 7))]
    )
    built = op.send(bad, consumer_record(INTERNAL, 0, 1, b"{oops", headers=bad.headers))
    assert len(built.dead) == 1
    headers = dict(built.dead[0].headers)
    assert (headers["source-topic"], headers["source-partition"], headers["source-offset"]) == (
        b"t.b",
        b"1",
        b"7",
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rows_window_of_a_rekeyed_input_counts_per_source_partition(seed: int) -> None:
    """Rows windows count per partition; re-keyed, per (source partition, internal partition): the
    operator's results equal the oracle's over the records the internal partition received, with
    their source partitions."""
    rng = random.Random(seed)
    op = Operator({"rows": 2})
    events: list[Event] = []
    msgs: list[Msg] = []
    offsets = {0: 0, 1: 0}
    for i in range(120):
        ts = i
        k = rng.randrange(3)
        if rng.random() < 0.4:
            events.append(Event("a", 0, i, ts, {"ts": ts, "k": k}))
            msgs.append(consumer_record("t.a", 0, i, json.dumps({"ts": ts, "k": k}).encode()))
        else:
            s = rng.randrange(2)
            events.append(Event("b", s, offsets[s], ts, {"ts": ts, "k": k}))
            msgs.append(_record(s, offsets[s], {"ts": ts, "k": k}, internal_offset=i))
            offsets[s] += 1
    for s in (0, 1):
        msgs.append(_mark(s, 10_000, internal_offset=1000 + s))
    msgs.append(consumer_record("t.a", 0, 999, b'{"ts": 10000, "k": 99}'))
    got = _ids(op.send(*msgs))
    want = sorted(
        f"t.a:{a[0]}:{a[1]}|t.b:{b[0]}:{b[1]}"
        for (a, b), n in expected_results(op.query, events).items()
        for _ in range(n)
    )
    assert got == want and len(got) > 20
