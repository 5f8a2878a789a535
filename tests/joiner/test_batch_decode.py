"""The joiner decodes input records as replay does: big integers exactly, poison numbers refused."""

from __future__ import annotations

import io
import json
import random

import pytest
from tests.kafka_records import TopicPartition, consumer_record

from streamjoin.engine import ResultFormatter
from streamjoin.joiner.batch.builder import BatchBuilder
from streamjoin.operator import OperatorFactory
from streamjoin.query import parse_query
from streamjoin.replay import DeadLetter, replay

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [{"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 5}} for s in "ab"],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)

# Keys orjson alone would read as the same float (2**70 and 2**70 + 1), the 64-bit bounds and just
# past them, a long mantissa, and values the engine refuses (NaN, Infinity, beyond a double).
KEYS = [
    "1180591620717411303424",
    "1180591620717411303425",
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "7",
    "0.12345678901234567890123",
    "NaN",
    "Infinity",
    "1e400",
]


def _events(seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(rng.choice("ab"), f'{{"ts": {i // 4}, "k": {rng.choice(KEYS)}}}') for i in range(120)]


def _replayed(events: list[tuple[str, str]]) -> tuple[set[str], int]:
    out, letters = io.StringIO(), []

    def dead(letter: DeadLetter) -> None:
        letters.append(letter)

    lines = [f'{{"stream": "{s}", "record": {raw}}}\n' for s, raw in events]
    replay(QUERY, lines, out, output_format="ids", on_malformed=dead)
    return set(out.getvalue().split()), len(letters)


def _joined(events: list[tuple[str, str]]) -> tuple[set[str], int]:
    builder = BatchBuilder(QUERY, 0, "dead")
    operator = OperatorFactory(QUERY).build(0, journal=True)
    offsets = dict.fromkeys("ab", 0)
    values: list[bytes] = []
    dead = 0
    for batch, (stream, raw) in enumerate(events):
        message = consumer_record(f"t.{stream}", 0, offsets[stream], raw.encode())
        offsets[stream] += 1
        built = builder.build(
            operator,
            {TopicPartition(message.topic, 0): [message]},
            batch=batch,
            offsets={},
            trims=[],
            last_arrival={},
            now=0.0,
        )
        values.extend(r.value for r in built.results)
        dead += len(built.dead)
    values.extend(ResultFormatter(QUERY).splicer()(r) for r in operator.finish())
    return {json.loads(v)["id"] for v in values}, dead


@pytest.mark.parametrize("seed", range(4))
def test_the_joiner_accepts_and_joins_exactly_what_replay_does(seed: int) -> None:
    events = _events(seed)
    replayed, replay_dead = _replayed(events)
    joined, joiner_dead = _joined(events)
    assert joined == replayed and len(joined) > 5
    assert joiner_dead == replay_dead > 0


def test_integers_beyond_64_bits_are_distinct_join_keys() -> None:
    events = [
        ("a", '{"ts": 1, "k": 1180591620717411303424}'),
        ("b", '{"ts": 1, "k": 1180591620717411303425}'),
    ]
    assert _joined(events) == (set(), 0)
    same = [("a", '{"ts": 1, "k": 1180591620717411303424}'), ("b", '{"ts": 1, "k": 1180591620717411303424}')]
    assert _joined(same)[0] == {"t.a:0:0|t.b:0:0"}
