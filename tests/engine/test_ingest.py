"""The record reader's rules: what is a timestamp, a join key, JSON; how far ahead a record may be."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from streamjoin.engine import MalformedRecord, MultiJoin, RecordReader
from streamjoin.engine.ingest import DEFAULT_MAX_FUTURE, TIMESTAMP_LIMIT, loads_record
from streamjoin.query import parse_query

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [
            {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 10}},
            {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"range": 10}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"ts": 1' + b"0" * 400 + b', "k": 1}', "out of range"),
        (b'{"ts": 1e300, "k": 1}', "out of range"),
        (b'{"ts": -1e300, "k": 1}', "out of range"),
        (b'{"ts": 9007199254740993, "k": 1}', "out of range"),
        (b'{"ts": NaN, "k": 1}', "not JSON: NaN"),
        (b'{"ts": -Infinity, "k": 1}', "not JSON: -Infinity"),
        (b'{"ts": 1e400, "k": 1}', "too large for a double"),
        (b'{"ts": true, "k": 1}', "not a finite number"),
        (b'{"ts": false, "k": 1}', "not a finite number"),
        (b'{"ts": "5", "k": 1}', "not a finite number"),
        (b'{"ts": 5, "k": true}', "is a boolean"),
        (b'{"ts": 5, "k": 1, "x": [1, NaN]}', "not JSON: NaN"),
        (b'{"ts": 5, "k": 1, "x": {"y": 1e999}}', "too large for a double"),
        (b'{"ts": 5, "k": 1, "x": ' + b"1" * 5000 + b"}", "not JSON"),
        (b'{"ts": 5, "k": 1, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deep"),
    ],
)
def test_poison_is_malformed_with_its_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(MalformedRecord, match=reason.replace("(", r"\(")):
        RecordReader(QUERY).decode("a", raw)


def test_reason_of_a_huge_timestamp_is_short() -> None:
    with pytest.raises(MalformedRecord) as info:
        RecordReader(QUERY).decode("a", b'{"ts": 1' + b"0" * 4000 + b', "k": 1}')
    assert len(str(info.value)) < 120


@pytest.mark.parametrize("ts", [0, -5, 1.5, TIMESTAMP_LIMIT, -TIMESTAMP_LIMIT, 1_700_000_000_000])
def test_sane_timestamps_pass(ts: float) -> None:
    assert RecordReader(QUERY).decode("a", json.dumps({"ts": ts, "k": 1}).encode()) == (
        ts,
        {"ts": ts, "k": 1},
    )


def test_big_integers_in_other_fields_pass() -> None:
    _, record = RecordReader(QUERY).decode("a", b'{"ts": 1, "k": 1, "x": 1' + b"0" * 100 + b"}")
    assert record["x"] == 10**100


def test_loads_record_refuses_nan_and_overflow() -> None:
    assert loads_record('{"a": 1.5e308}') == {"a": 1.5e308}
    for text in ('{"a": NaN}', '{"a": Infinity}', '{"a": 2e308}'):
        with pytest.raises(MalformedRecord):
            loads_record(text)


def test_true_never_joins_one() -> None:
    """Python's `True == 1` must not make JSON `true` join `1`: a boolean key is refused."""
    reader = RecordReader(QUERY)
    engine = MultiJoin(QUERY)
    joined: list[Any] = []
    for offset, (stream, raw) in enumerate([("a", b'{"ts": 1, "k": 1}'), ("b", b'{"ts": 2, "k": true}')]):
        try:
            ts, record = reader.decode(stream, raw)
        except MalformedRecord:
            continue
        engine.add(stream, record, ts=ts, offset=offset)
    joined += engine.finish()
    assert joined == []


def test_the_horizon_follows_what_each_input_has_shown() -> None:
    reader = RecordReader(QUERY, max_future=1_000)

    def read(stream: str, ts: float, partition: int = 0) -> None:
        ts, _ = reader.read(stream, {"ts": ts, "k": 1}, horizon=reader.horizon(stream))
        reader.shown(stream, partition, ts)

    assert reader.horizon("a") == math.inf  # nothing shown yet
    read("a", -5)
    read("a", -5, partition=1)
    assert reader.horizon("a") == math.inf  # the first record of a partition bounds nothing
    read("a", 10_000)
    assert reader.horizon("a") == 11_000 and reader.horizon("a", slack=250) == 11_250
    assert reader.horizon("b") == math.inf  # each input has its own
    read("a", 10_800, partition=1)  # over the input's partitions
    read("a", 3)  # an older record does not pull it back
    assert reader.horizon("a") == 11_800 and reader.newest("a") == 10_800
    reason = (
        r"timestamp 11801 is more than max_future=1000 ahead of the newest timestamp of input 'a' \(10800\)"
    )
    with pytest.raises(MalformedRecord, match=reason):
        read("a", 11_801)
    assert reader.newest("a") == 10_800
    unbounded = RecordReader(QUERY, max_future=None)
    for ts in (1, 2):
        unbounded.shown("a", 0, ts)
    assert unbounded.horizon("a") == math.inf and unbounded.newest("a") == 2
    assert RecordReader(QUERY).max_future == DEFAULT_MAX_FUTURE
