"""Poison records and oversized outputs: dead-lettered with their reason, the partition moves on.

Every kind of record that used to stop a partition (issue "Faults", item 1) is produced through the
real broker to a real worker: a timestamp of 10**400, 1e300, NaN or `true`; `Infinity` or 1e999 in
a field; `true` as a join key next to `1`; a timestamp far ahead of its input's newest; a malformed
record larger than the dead-letter topic takes; and a valid record whose results are larger than
the output topic takes. The output must equal the oracle's, less the oversized results, which
arrive on the dead-letter topic as references (their ids).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.joiner.conftest import QuerySetup
from tests.joiner.harness import (
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    produce,
    readiness,
    register_query,
    run_scenario,
    wait_running,
)

from streamjoin.dev.ports import free_port
from streamjoin.testing import Event

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

TOPIC_LIMIT = 4096
"""`max.message.bytes` of the output and dead-letter topics: a larger record is refused by the broker."""

POISON: list[tuple[bytes, str]] = [
    (b'{"ts": 1' + b"0" * 400 + b', "k": 1, "v": 1}', "out of range"),
    (b'{"ts": 1e300, "k": 1, "v": 1}', "out of range"),
    (b'{"ts": NaN, "k": 1, "v": 1}', "not JSON: NaN"),
    (b'{"ts": true, "k": 1, "v": 1}', "not a finite number"),
    (b'{"ts": 5, "k": true, "v": 1}', "is a boolean"),
    (b'{"ts": 5, "k": 1, "v": 1, "x": Infinity}', "not JSON: Infinity"),
    (b'{"ts": 5, "k": 1, "v": 1e999}', "too large for a double"),
    (b'{"ts": 1000000000000, "k": 1, "v": 1}', "ahead of the newest timestamp"),
    (b'{"bad": "' + b"x" * 6000 + b'"', "dropped"),  # malformed, and larger than the dead-letter topic
]


def test_poison_records_and_oversized_results(
    query_setup: Callable[[int], QuerySetup],
    make_topic: Callable[..., str],
    kafka_broker: str,
    redis_server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = query_setup(2)
    limit = {"max.message.bytes": str(TOPIC_LIMIT)}
    output = make_topic("out", partitions=2, config=limit)
    dead_topic = make_topic("dead", partitions=2, config=limit)
    w = make_workload(name=s.name, topics=s.topics, output=output, partitions=2, per_stream=300, keys=20,
                      seed=5, lateness=2)  # fmt: skip
    w.query_json["dead_letter"] = {"topic": dead_topic}
    items: list[tuple[str, int, Any]] = list(w.items)
    # One valid record of `a` (that has results) whose results are each larger than the topic takes.
    joined = {i.split("|")[0] for i in expected_ids(w.query, _events(items))}
    big_at = next(
        i
        for i in range(len(items) // 2, len(items))
        if items[i][0] == "a" and f"{s.topics['a']}:{items[i][1]}:{_offset_of(items, i)}" in joined
    )
    _, p, record = items[big_at]
    items[big_at] = ("a", p, {**record, "pad": "x" * 5000})
    # Poison in the second half, when every partition has a watermark, in both partitions.
    start = len(items) // 2 + 10
    for i, (raw, _) in enumerate(POISON):
        items.insert(start + 7 * i, ("abc"[i % 3], i % 2, raw))
    big_at = next(i for i, item in enumerate(items) if isinstance(item[2], dict) and "pad" in item[2])
    big_fragment = f"{s.topics['a']}:{p}:{_offset_of(items, big_at)}"
    monkeypatch.setenv("STREAMJOIN_MAX_RECORD_BYTES", str(TOPIC_LIMIT - 96))
    ready_port = free_port()
    joiner = JoinerProcess(tmp_path, kafka_broker, redis_server, group=s.group, prefix=s.prefix,
                           extra=["--ready-port", str(ready_port)])  # fmt: skip

    async def scenario() -> tuple[Counter[str], Counter[str], list[Any], list[Any], bool | None]:
        await register_query(redis_server, s.prefix, w.query_json)
        joiner.start()
        await wait_running(redis_server, s.prefix, s.name, 2)
        events = produce(kafka_broker, s.topics, items)
        want = expected_ids(w.query, events)
        oversized = Counter({i: n for i, n in want.items() if i.split("|")[0] == big_fragment})
        expected = want - oversized
        records = await consume_output(
            kafka_broker, output, want=sum(expected.values()), timeout_s=60, quiet_s=4
        )
        dead = await consume_output(
            kafka_broker, dead_topic, want=len(POISON) + sum(oversized.values()), timeout_s=30, quiet_s=2
        )
        return expected, oversized, records, dead, readiness(ready_port)

    (expected, oversized, records, dead, ready), _ = run_scenario(joiner, scenario)
    assert ready is True
    assert oversized, "the padded record joins nothing: the test proves nothing"
    got = Counter(json.loads(r.value)["id"] for r in records)
    assert got == expected, (
        f"missing {sum((expected - got).values())}, extra {sum((got - expected).values())}"
    )
    references = [r for r in dead if dict(r.headers).get("result-id") is not None]
    assert Counter(dict(r.headers)["result-id"].decode() for r in references) == oversized
    for r in references:
        reference = json.loads(r.value)
        assert reference["query"] == s.name and reference["bytes"] > TOPIC_LIMIT - 96
        assert "larger than max_record_bytes" in dict(r.headers)["reason"].decode()
    letters = [r for r in dead if dict(r.headers).get("result-id") is None]
    assert len(letters) == len(POISON), [dict(r.headers)["reason"] for r in letters]
    reasons = sorted(dict(r.headers)["reason"].decode() for r in letters)
    for raw, why in POISON:
        matching = [r for r in letters if r.value == raw or (not r.value and why == "dropped")]
        assert len(matching) == 1, (why, reasons)
        assert why in dict(matching[0].headers)["reason"].decode(), (why, reasons)
    assert all(len(r.value) <= TOPIC_LIMIT for r in dead)


def _offset_of(items: list[tuple[str, int, Any]], index: int) -> int:
    """Return the Kafka offset of `items[index]`: how many records went before it to its topic-partition."""
    stream, p, _ = items[index]
    return sum(1 for s, q, _ in items[:index] if s == stream and q == p)


def _events(items: list[tuple[str, int, Any]]) -> list[Event]:
    """Return the events `items` become when produced in order (offsets counted per topic-partition)."""
    offsets: Counter[tuple[str, int]] = Counter()
    events = []
    for stream, p, record in items:
        events.append(Event(stream, p, offsets[stream, p], record["ts"], record))
        offsets[stream, p] += 1
    return events
