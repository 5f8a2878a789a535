"""The back-fill writes a projected query's rows as the joiner and replay do (`ResultFormatter.value`)."""

from __future__ import annotations

from collections import Counter

from streamjoin.backfill.plan import plan_backfill
from streamjoin.query import parse_query
from streamjoin.query.dump import dump_query
from streamjoin.testing.oracle_rows import project

from .feed_model import run_model
from .workload import make_query, make_workload

TOPICS = {"a": "t.a", "b": "t.b", "c": "t.c"}
COLUMNS = [
    {"name": "twice", "expr": {"op": "*", "args": [{"ref": ["a", "n"]}, 2]}},
    {"star": "c"},
    {
        "name": "far",
        "expr": {"op": ">", "args": [{"op": "-", "args": [{"ref": ["c", "v"]}, {"ref": ["b", "v"]}]}, 3]},
    },
]


def test_projected_rows_are_the_oracles() -> None:
    w = make_workload(TOPICS, partitions=2, records=300, seed=6)
    whole = run_model(plan_backfill(make_query("q", "range", TOPICS), 0, 10_000, partitions=2), w)
    projected = parse_query({**dump_query(make_query("q", "range", TOPICS)), "columns": COLUMNS})
    out = run_model(plan_backfill(projected, 0, 10_000, partitions=2), w)
    assert out and Counter(r["id"] for r in out) == Counter(r["id"] for r in whole)
    records = {r["id"]: r["tuples"] for r in whole}
    assert all(set(r) == {"query", "ts", "row", "id"} for r in out)
    assert all(r["row"] == project(projected, records[r["id"]]) for r in out)
