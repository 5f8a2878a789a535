"""The batch builder's bounds, in memory: the horizon (max_future, growing while the watermark
stands still) and results or dead letters over max_record_bytes turned into references."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from streamjoin.engine import MultiJoin
from streamjoin.joiner.batch import BatchBuilder, BuiltBatch
from streamjoin.query import parse_query

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [
            {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 50}},
            {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"range": 50}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)


@dataclass
class Msg:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class TP:
    topic: str
    partition: int


class Feed:
    """One operator's builder and engine, fed record by record."""

    def __init__(self, **limits: Any) -> None:
        self.builder = BatchBuilder(QUERY, 0, "dead", **limits)
        self.engine = MultiJoin(QUERY, journal=True)
        for stream in "ab":
            self.engine.assign(stream, [0])
        self.offsets = {"t.a": 0, "t.b": 0}
        self.batch = 0

    def send(self, now: float, *records: tuple[str, bytes]) -> BuiltBatch:
        messages: dict[TP, list[Msg]] = {}
        for stream, raw in records:
            topic = f"t.{stream}"
            messages.setdefault(TP(topic, 0), []).append(Msg(topic, 0, self.offsets[topic], 0, None, raw))
            self.offsets[topic] += 1
        self.batch += 1
        return self.builder.build(
            self.engine, messages, batch=self.batch, offsets={}, trims=[], last_arrival={}, now=now
        )


def _rec(ts: float, k: int = 1, **extra: Any) -> bytes:
    return json.dumps({"ts": ts, "k": k, **extra}).encode()


def _reasons(built: BuiltBatch) -> list[str]:
    return [dict(d.headers)["reason"].decode() for d in built.dead]


def test_far_future_records_are_dead_letters_until_wall_time_catches_up() -> None:
    feed = Feed(max_future=1_000)
    feed.send(100.0, ("a", _rec(10)), ("b", _rec(10)))  # watermark 10
    built = feed.send(100.0, ("a", _rec(5_000)))
    assert len(built.dead) == 1 and "max_future=1000 ahead of the watermark" in _reasons(built)[0]
    assert feed.engine.watermark == 10  # the clock did not move
    # The producer paused 5 s of wall time: the horizon grew by 5,000 (ms), the record is accepted.
    built = feed.send(105.0, ("a", _rec(5_000)), ("b", _rec(5_000)))
    assert not built.dead and len(built.results) == 1


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


def test_before_the_watermark_the_earliest_timestamp_bounds_the_future() -> None:
    feed = Feed(max_future=1_000)
    built = feed.send(0.0, ("a", _rec(10)), ("a", _rec(900)), ("a", _rec(5_000)))  # b has no record yet
    assert feed.engine.watermark == float("-inf")
    assert _reasons(built) == ["timestamp 5000 is more than max_future=1000 ahead of the watermark"]
