"""W-join `within` pairs, an input without a window, and a strict window in the back-fill: its results
equal the oracle's, whichever strategy the planner picks and with the strategy forced to time buckets.

The back-fill runs the same engine as replay and the joiner; what is specific to it is the read-ahead
of a time bucket (a windowless input reaches back as far as its largest tightened bound).
"""

from __future__ import annotations

from collections import Counter

import pytest

from streamjoin.backfill.plan import plan_backfill
from streamjoin.query import QueryDef, parse_query
from streamjoin.query.dump import dump_query

from .feed_model import run_model
from .workload import Oracle, make_query, make_workload

TOPICS = {"a": "t.a", "b": "t.b", "c": "t.c"}


def _window_models(base: QueryDef) -> QueryDef:
    spec = dump_query(base)
    a, _, c = spec["inputs"]
    a["window"] = {"range": a["window"]["range"], "strict": True}
    del c["window"]  # bounded only by the within pairs: c - b <= 30 and c - a <= 45
    spec["within"] = [["b", "c", 30], ["a", "c", 45]]
    return parse_query(spec)


@pytest.mark.parametrize("strategy", [None, "partition-time"])
@pytest.mark.parametrize("seed", [1, 2])
def test_backfill_of_a_wjoin_equals_the_oracle(strategy: str | None, seed: int) -> None:
    w = make_workload(TOPICS, partitions=2, records=600, seed=seed)
    query = _window_models(make_query("q", "range", TOPICS))
    options = {} if strategy is None else {"strategy": strategy}
    plan = plan_backfill(query, 0, 10_000, target_groups=6, partitions=2, **options)
    got = Counter(r["id"] for r in run_model(plan, w))
    want = Oracle(query, w.events).ids(0, 10_000)
    assert sum(want.values()) > 20, "the workload should produce results"
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
