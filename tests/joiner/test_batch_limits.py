"""The batch builder's bounds, in memory: the horizon (max_future past the newest timestamp each
input has shown, growing while it stands still) and results or dead letters over max_record_bytes
turned into references."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.kafka_records import ConsumerRecord, TopicPartition, consumer_record

from streamjoin.joiner.batch.builder import BatchBuilder, BuiltBatch
from streamjoin.operator import OperatorFactory
from streamjoin.query import QueryDef, parse_query

RAW: dict[str, Any] = {
    "name": "q",
    "inputs": [
        {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 50}},
        {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"range": 50}},
    ],
    "where": [["a.k", "=", "b.k"]],
    "output": {"topic": "out"},
}
QUERY = parse_query(RAW)
DAY_MS = 86_400_000
NOW_MS = 1_790_000_000_000


class Feed:
    """One operator's builder, operator and engine, fed record by record."""

    def __init__(self, query: QueryDef = QUERY, **limits: Any) -> None:
        self.builder = BatchBuilder(query, 0, "dead", **limits)
        self.operator = OperatorFactory(query, replan_every=None).build(0, journal=True)
        self.engine = self.operator.engine
        self.offsets = {"t.a": 0, "t.b": 0}
        self.batch = 0

    def send(self, now: float, *records: tuple[str, bytes]) -> BuiltBatch:
        messages: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = {}
        for stream, raw in records:
            topic = f"t.{stream}"
            messages.setdefault(TopicPartition(topic, 0), []).append(
                consumer_record(topic, 0, self.offsets[topic], raw)
            )
            self.offsets[topic] += 1
        self.batch += 1
        return self.builder.build(
            self.operator, messages, batch=self.batch, offsets={}, trims=[], last_arrival={}, now=now
        )


def _rec(ts: float, k: int = 1, **extra: Any) -> bytes:
    return json.dumps({"ts": ts, "k": k, **extra}).encode()


def _reasons(built: BuiltBatch) -> list[str]:
    return [dict(d.headers)["reason"].decode() for d in built.dead]


def test_far_future_records_are_dead_letters_until_wall_time_catches_up() -> None:
    feed = Feed(max_future=1_000)
    feed.send(100.0, ("a", _rec(9)), ("a", _rec(10)), ("b", _rec(9)), ("b", _rec(10)))  # newest 10
    built = feed.send(100.0, ("a", _rec(5_000)))
    assert _reasons(built) == [
        "timestamp 5000 is more than max_future=1000 ahead of the newest timestamp of input 'a' (10)"
    ]
    assert feed.engine.watermark == 10  # the clock did not move
    # The producer paused 5 s of wall time: the horizon grew by 5,000 (ms), the record is accepted.
    built = feed.send(105.0, ("a", _rec(5_000)), ("b", _rec(5_000)))
    assert not built.dead and len(built.results) == 1
    counters = built.commit.counters
    assert counters["dead"] == 0 and feed.send(105.0, ("a", _rec(10**12))).commit.counters["malformed:a"] == 1


def test_lateness_does_not_pull_the_horizon_back() -> None:
    feed = Feed(parse_query({**RAW, "lateness": 10**9}))
    built = feed.send(0.0, ("a", _rec(1)), ("b", _rec(1)), ("a", _rec(2)), ("b", _rec(3)))
    assert feed.engine.watermark == 2 - 10**9  # far behind: it no longer bounds the future
    assert not built.dead
    built = feed.send(0.0, ("a", _rec(10 * DAY_MS)), ("b", _rec(2)))
    assert _reasons(built) == [
        "timestamp 864000000 is more than max_future=604800000 ahead of the newest timestamp of input 'a' (2)"
    ]


@pytest.mark.parametrize("old", [NOW_MS - 8 * DAY_MS, -5], ids=["8 days old", "negative"])
def test_one_old_first_record_bounds_nothing(old: int) -> None:
    feed = Feed()
    # The first record of each input is old, and the second is read first in the next batch.
    built = feed.send(0.0, ("a", _rec(old, k=9)), ("b", _rec(old, k=9)))
    goods = [("a" if i % 2 else "b", _rec(NOW_MS + i)) for i in range(20)]
    built = feed.send(0.0, *goods)
    assert not built.dead and built.late == 0
    assert len(built.results) == 9 * 10  # every a with every b, but a's newest waits for the watermark
    # the guard still holds once the inputs have shown their present
    built = feed.send(0.0, ("b", _rec(NOW_MS + 8 * DAY_MS)))
    assert len(built.dead) == 1


def test_poison_timestamps_do_not_move_the_clock() -> None:
    feed = Feed()
    feed.send(0.0, ("a", _rec(10)), ("b", _rec(10)))
    built = feed.send(0.0, ("a", b'{"ts": 1e300, "k": 1}'), ("a", b'{"ts": 1' + b"0" * 400 + b', "k": 1}'))
    assert len(built.dead) == 2 and feed.engine.watermark == 10
    built = feed.send(0.0, ("a", _rec(20)), ("b", _rec(20)))
    assert not built.dead and built.late == 0 and len(built.results) == 3


def test_oversized_results_and_dead_letters_become_references() -> None:
    feed = Feed(max_record_bytes=2_000)
    built = feed.send(0.0, ("a", _rec(10, pad="x" * 3_000)), ("b", _rec(10)), ("b", b"{" + b"y" * 5_000))
    assert built.results == []
    reference, letter = sorted(built.dead, key=lambda d: len(d.value), reverse=True)
    body = json.loads(reference.value)
    assert body["query"] == "q" and body["id"] == "t.a:0:0|t.b:0:0" and body["bytes"] > 3_000
    assert dict(reference.headers)["result-id"] == b"t.a:0:0|t.b:0:0"
    assert letter.value == b"" and b"dropped" in dict(letter.headers)["reason"]
    assert dict(letter.headers)["source-offset"] == b"1"
    assert built.commit.counters["results"] == 0 and built.commit.counters["dead"] == 2


def test_before_the_watermark_the_inputs_newest_timestamp_bounds_the_future() -> None:
    feed = Feed(max_future=1_000)
    built = feed.send(0.0, ("a", _rec(10)), ("a", _rec(900)), ("a", _rec(5_000)))  # b has no record yet
    assert feed.engine.watermark == float("-inf")
    assert _reasons(built) == [
        "timestamp 5000 is more than max_future=1000 ahead of the newest timestamp of input 'a' (900)"
    ]


def test_a_restarted_operator_refuses_a_far_ahead_first_record() -> None:
    feed = Feed()
    committed = feed.send(0.0, *[("ab"[i % 2], _rec(NOW_MS + i)) for i in range(20)]).commit
    # Another process takes the partition over from that commit: a fresh builder and engine.
    again = Feed()
    again.engine.restore([], committed.scalars)
    again.builder.reset([], {}, committed.scalars)
    built = again.send(0.0, ("a", _rec(NOW_MS + 10**12)), ("a", _rec(NOW_MS + 30)), ("b", _rec(NOW_MS + 31)))
    assert _reasons(built) == [
        f"timestamp {NOW_MS + 10**12} is more than max_future=604800000 ahead of the newest timestamp"
        f" of input 'a' ({NOW_MS + 18})"
    ]
    assert again.engine.watermark == NOW_MS + 30  # the far-ahead record moved no clock
