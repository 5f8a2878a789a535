"""Bounded joins as Flink SQL and ksqlDB write them: the W-join `within` pairs they become, the same
results as the SQL means (brute force over random inputs, and the oracle), and the refusals."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest

from streamjoin.query import parse_query
from streamjoin.query.sql import SqlError, Stream, parse_sql
from streamjoin.replay import replay
from streamjoin.testing import Event, expected_results

STREAMS = {"orders": Stream("shop.orders", "ts"), "payments": Stream("shop.payments", "ts")}
STREAMS_KAFKA_TS = {**STREAMS, "kafka": Stream("k", None)}
JOIN = "SELECT * FROM orders o JOIN payments p"

# text, what the query JSON says, and the pairs the SQL means (o.ts, p.ts)
FORMS: list[tuple[str, dict[str, Any], Callable[[int, int], bool]]] = [
    (  # Flink, symmetric: exactly a within pair
        f"{JOIN} ON o.id = p.id AND o.ts BETWEEN p.ts - INTERVAL '10' SECOND AND p.ts + INTERVAL '10' SECOND",
        {"within": [["orders", "payments", 10_000]], "where": [["orders.id", "=", "payments.id"]]},
        lambda o, p: abs(o - p) <= 10_000,
    ),
    (  # Flink, one-sided: the pair and the side it does not imply
        f"{JOIN} ON o.id = p.id AND o.ts BETWEEN p.ts - INTERVAL '10' SECOND AND p.ts",
        {
            "within": [["orders", "payments", 10_000]],
            "where": [["orders.id", "=", "payments.id"]],
            "filter": {
                "op": "between",
                "args": [
                    {"ref": ["orders", "ts"]},
                    {"op": "-", "args": [{"ref": ["payments", "ts"]}, 10_000]},
                    {"ref": ["payments", "ts"]},
                ],
            },
        },
        lambda o, p: p - 10_000 <= o <= p,
    ),
    (  # Flink, as two comparisons: the implied one goes, the other is a where triple
        f"{JOIN} ON o.id = p.id WHERE o.ts >= p.ts - INTERVAL '10' SECOND AND o.ts <= p.ts",
        {
            "within": [["orders", "payments", 10_000]],
            "where": [["orders.id", "=", "payments.id"], ["orders.ts", "<=", "payments.ts"]],
        },
        lambda o, p: p - 10_000 <= o <= p,
    ),
    (  # ksqlDB
        f"{JOIN} WITHIN 10 SECONDS ON o.id = p.id",
        {"within": [["orders", "payments", 10_000]], "where": [["orders.id", "=", "payments.id"]]},
        lambda o, p: abs(o - p) <= 10_000,
    ),
    (  # ksqlDB, before and after: p.ts in [o.ts - 2 s, o.ts + 10 s]
        "SELECT * FROM orders o INNER JOIN payments p WITHIN (2 SECONDS, 10 SECONDS) ON o.id = p.id",
        {
            "within": [["orders", "payments", 10_000]],
            "where": [["orders.id", "=", "payments.id"]],
            "filter": {
                "op": ">=",
                "args": [
                    {"ref": ["payments", "ts"]},
                    {"op": "-", "args": [{"ref": ["orders", "ts"]}, 2_000]},
                ],
            },
        },
        lambda o, p: o - 2_000 <= p <= o + 10_000,
    ),
]


def _events(seed: int) -> list[Event]:
    """Random orders and payments of a few ids over a minute, in timestamp order."""
    rnd = random.Random(seed)
    raw = sorted(
        (rnd.randrange(60_000), rnd.choice(("orders", "payments")), rnd.randrange(4)) for _ in range(160)
    )
    offsets: Counter[str] = Counter()
    events = []
    for ts, stream, key in raw:
        events.append(Event(stream, 0, offsets[stream], ts, {"ts": ts, "id": key}))
        offsets[stream] += 1
    return events


@pytest.mark.parametrize(("text", "expected", "means"), FORMS, ids=range(len(FORMS)))
def test_bounded_join_forms_are_within_pairs_with_the_results_the_sql_means(
    text: str, expected: dict[str, Any], means: Callable[[int, int], bool]
) -> None:
    parsed = parse_sql(text, STREAMS)
    assert {k: v for k, v in parsed.items() if k != "inputs"} == expected
    assert all("window" not in i for i in parsed["inputs"])
    query = parse_query({"name": "q", "output": {"topic": "out"}, **parsed})
    for seed in range(3):
        events = _events(seed)
        orders = [e for e in events if e.stream == "orders"]
        payments = [e for e in events if e.stream == "payments"]
        meant = Counter(
            ((0, o.offset), (0, p.offset))
            for o in orders
            for p in payments
            if o.record["id"] == p.record["id"] and means(int(o.ts), int(p.ts))
        )
        out = StringIO()
        lines = (json.dumps({"stream": e.stream, "record": e.record}) for e in events)
        replay(query, lines, out, output_format="ids")
        got = Counter(
            tuple((int(p), int(o)) for p, o in (part.rsplit(":", 2)[1:] for part in line.split("|")))
            for line in out.getvalue().split()
        )
        assert meant and got == meant == expected_results(query, events)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # ksqlDB's documented three-way join: its second WITHIN is against the first join's result
            "SELECT * FROM orders o INNER JOIN payments p WITHIN 1 HOURS ON p.id = o.id "
            "INNER JOIN kafka s WITHIN 2 HOURS ON s.id = o.id",
            "WITHIN on a JOIN after the first bounds s against the newest record joined before it (ksqlDB), "
            "which is not a pair of inputs: name the pairs to bound after the last input, "
            "e.g. WITHIN (o, s) 2 HOURS",
        ),
        (
            f"{JOIN} WITHIN 10 SECONDS GRACE PERIOD 1 MINUTE ON o.id = p.id",
            'GRACE PERIOD: streamjoin waits for late records by the query\'s "lateness" (docs/queries.md): '
            'give "lateness" in milliseconds next to the sql',
        ),
        (
            "SELECT * FROM orders o JOIN kafka k WITHIN (1 SECOND, 10 SECONDS) ON o.id = k.id",
            "WITHIN (1 SECOND, 10 SECONDS) is not symmetric: a within pair bounds |orders - kafka|, "
            "and kafka has no timestamp field to compare the sides with: write WITHIN 10 SECONDS "
            "(|orders - kafka| <= 10000)",
        ),
        (
            "SELECT * FROM orders o, payments p WITHIN 10 SECONDS WHERE o.id = p.id",
            "WITHIN 10 SECONDS follows a JOIN (ksqlDB: JOIN s WITHIN 10 SECONDS ON ...); "
            "between inputs listed with commas write WITHIN (a, b) n after them",
        ),
        (
            f"{JOIN} ON o.id = p.id WHERE o.ts >= p.ts - INTERVAL '10' SECOND",
            "this bounds the timestamps of orders and payments on one side only, and orders has no window, "
            "so its records could be needed forever: bound them on both sides "
            "(x.ts BETWEEN y.ts - INTERVAL ... AND y.ts + INTERVAL ...) or write WITHIN (orders, payments) n",
        ),
        (
            f"{JOIN} ON o.id = p.id AND o.ts BETWEEN p.ts + INTERVAL '5' SECOND AND p.ts",
            "these bounds leave no pair of orders and payments records",
        ),
        (
            f"{JOIN} WITHIN 10 SECONDS ON o.id = p.id WITHIN (o, p) 5",
            "the pair (orders, payments) is bounded twice: here and by WITHIN (orders, payments)",
        ),
        (
            f"{JOIN} ON o.id = p.id AND o.ts BETWEEN p.ts - INTERVAL '1' DAY TO SECOND AND p.ts",
            "an INTERVAL takes one unit (INTERVAL '90' MINUTE, not DAY TO SECOND)",
        ),
    ],
)
def test_forms_that_are_no_pair_of_inputs_are_refused_with_the_form_to_write(text: str, message: str) -> None:
    with pytest.raises(SqlError) as info:
        parse_sql(text, STREAMS_KAFKA_TS)
    assert info.value.problem == message


def test_an_explicit_within_keeps_the_terms_and_a_window_keeps_one_sided_bounds() -> None:
    explicit = parse_sql(f"{JOIN} ON o.id = p.id AND o.ts <= p.ts WITHIN (o, p) 5 SECONDS", STREAMS)
    assert explicit["within"] == [["orders", "payments", 5_000]]
    assert explicit["where"] == [["orders.id", "=", "payments.id"], ["orders.ts", "<=", "payments.ts"]]
    windowed = parse_sql(
        "SELECT * FROM orders [RANGE 1 MINUTE] o JOIN payments [RANGE 1 MINUTE] p ON o.id = p.id "
        "WHERE o.ts >= p.ts - INTERVAL '10' SECOND",
        STREAMS,
    )
    assert "within" not in windowed and windowed["filter"]["op"] == ">="
