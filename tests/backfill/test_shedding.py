"""A query with `shedding` in the back-fill: the same output as replay, for a seeded `random` policy,
with range, count and partitioned count windows.

What a shedding policy keeps depends on every record before, so the back-fill runs one group per
partition (no time buckets) and its engine makes replay's decisions, seeded draws included.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from streamjoin.backfill.plan import plan_backfill
from streamjoin.engine import MultiJoin
from streamjoin.query import QueryDef, parse_query
from streamjoin.query.dump import dump_query
from streamjoin.testing import Event

from .feed_model import run_model
from .workload import Oracle, make_query, make_workload

TOPICS = {"a": "t.a", "b": "t.b", "c": "t.c"}


def _shedding(query: QueryDef, seed: int) -> QueryDef:
    return parse_query({**dump_query(query), "shedding": {"memory": 6, "policy": "random", "seed": seed}})


def _replay(query: QueryDef, events: Sequence[Event], partitions: int) -> Counter[str]:
    """Return the ids `streamjoin replay` gives, partition by partition (one engine each)."""
    topics = [i.topic for i in query.inputs]
    ids: Counter[str] = Counter()
    for p in range(partitions):
        engine = MultiJoin(query, partitions={s: [p] for s in query.stream_names})
        for e in events:
            if e.partition == p:
                engine.add(e.stream, e.record, ts=e.ts, partition=p, offset=e.offset)
        for r in engine.finish():
            ids["|".join(f"{topics[x.input]}:{x.partition}:{x.offset}" for x in r)] += 1
    return ids


@pytest.mark.parametrize("kind", ["range", "rows", "partitioned"])  # count windows shed too
@pytest.mark.parametrize("seed", [1, 2])
def test_backfill_sheds_as_replay_does(seed: int, kind: str) -> None:
    w = make_workload(TOPICS, partitions=2, records=700, seed=seed)
    query = _shedding(make_query("q", kind, TOPICS), seed)
    plan = plan_backfill(query, 0, 10_000, target_groups=8, partitions=2)
    assert plan.strategy == "partition" and plan.buckets == 1
    got = Counter(r["id"] for r in run_model(plan, w))
    want = _replay(query, w.events, 2)
    exact = Oracle(query, w.events).ids(0, 10_000)
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert not got - exact and sum(got.values()) < sum(exact.values())


def test_time_buckets_are_refused_with_shedding() -> None:
    query = _shedding(make_query("q", "range", TOPICS), 1)
    with pytest.raises(ValueError, match="cannot shed"):
        plan_backfill(query, 0, 100, partitions=2, strategy="partition-time")
