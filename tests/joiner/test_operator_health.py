"""A stopped operator (its query deleted) takes its health problem with it: no 503 outlives it."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from streamjoin.joiner.health import Health
from streamjoin.joiner.operators.operator import OperatorConfig, OutputTopics, PartitionOperator
from streamjoin.operator import OperatorFactory
from streamjoin.query import parse_query

QUERY = parse_query(
    {
        "name": "gone",
        "inputs": [
            {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 10}},
            {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"range": 10}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)


def test_stopping_an_operator_clears_its_health_problem() -> None:
    health = Health()
    unused = cast(Any, None)  # Kafka, the store and the publisher: a never-started operator uses none
    op = PartitionOperator(
        OperatorFactory(QUERY),
        3,
        outputs=OutputTopics("out", 4, "dead", 4, 4),
        kafka=unused,
        store=unused,
        publisher=unused,
        owner="w",
        health=health,
        config=OperatorConfig(),
        on_status=lambda *_: None,
    )
    health.fail("operator gone[3]", "cannot position at start")  # what a failing attempt reports
    health.fail("registry", "unrelated")
    assert not health.ready
    asyncio.run(op.stop())
    assert health.problems() == {"registry": "unrelated"}
