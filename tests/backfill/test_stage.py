"""The back-fill's plan and engine stage against the oracle, without Spark (fast).

`feed_model` builds the feed the Spark job is asked to build; `GroupRunner` runs the shared engine
over it. Equal multisets of result ids, for every window kind, ranges that cut through windows,
time buckets of every size, and Kafka-timestamp inputs.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pandas as pd
import pytest

from streamjoin.backfill import stage
from streamjoin.backfill.plan import plan_backfill
from streamjoin.backfill.stage import FEED_COLUMNS, GroupRunner
from streamjoin.query import QueryDef, parse_query
from streamjoin.query.dump import dump_query
from streamjoin.testing import Event

from .feed_model import feed_rows, run_model
from .workload import Oracle, Workload, kafka_timed, make_query, make_workload

TOPICS = {"a": "t.a", "b": "t.b", "c": "t.c"}
RANGES = [(0, 10_000), (150, 420), (301, 302), (97, 640)]


@pytest.mark.parametrize("kind", ["range", "rows", "partitioned"])
@pytest.mark.parametrize("seed", [1, 2])
def test_stage_equals_oracle(kind: str, seed: int) -> None:
    w = make_workload(TOPICS, partitions=3, records=600, seed=seed)
    query = make_query("q", kind, TOPICS)
    oracle = Oracle(query, w.events)
    for start, end in RANGES:
        for target in (1, 4, 40):
            plan = plan_backfill(query, start, end, target_groups=target, partitions=3)
            got = Counter(r["id"] for r in run_model(plan, w))
            want = oracle.ids(start, end)
            assert got == want, (
                f"{kind} [{start}, {end}) {plan.strategy} x{plan.buckets}: "
                f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
            )
            if start == 150:
                assert sum(want.values()) > 20, "the range should hold a fair number of results"


def test_time_buckets_cut_windows() -> None:
    w = make_workload(TOPICS, partitions=2, records=600, seed=5)
    query = make_query("q", "range", TOPICS)
    plan = plan_backfill(query, 100, 500, target_groups=2, partitions=2, strategy="partition-time")
    assert plan.buckets == 1  # 4 * max T = 240 wide buckets would be too few to be worth it here
    narrow = plan_backfill(query, 100, 1100, target_groups=16, partitions=2)
    assert narrow.buckets == 5 and narrow.bucket_width == 240  # 4 * max T: overlap under 25 %
    got = Counter(r["id"] for r in run_model(narrow, w))
    assert got == Oracle(query, w.events).ids(100, 1100)


def test_kafka_timestamps() -> None:
    w = make_workload(TOPICS, partitions=2, records=500, seed=3)
    query = make_query("q", "rows", TOPICS, kafka_ts=True)
    start, end = 1_714_571_000_000 + 120 * 60_000, 1_714_571_000_000 + 400 * 60_000
    plan = plan_backfill(query, start, end, partitions=2)
    got = Counter(r["id"] for r in run_model(plan, w, kafka_ts=True))
    want = Oracle(query, kafka_timed(w)).ids(start, end)
    assert got == want and sum(want.values()) > 20


def test_output_records_are_the_live_format() -> None:
    w = make_workload(TOPICS, partitions=2, records=300, seed=4)
    query = make_query("q", "range", TOPICS)
    out = run_model(plan_backfill(query, 0, 10_000, partitions=2), w)
    assert out and all(set(r) == {"query", "ts", "tuples", "id"} for r in out)
    assert all(isinstance(r["ts"], int) and set(r["tuples"]) == {"a", "b", "c"} for r in out)
    assert all(r["ts"] == max(t["ts"] for t in r["tuples"].values()) for r in out)


def test_select_and_spliced_records() -> None:
    w = make_workload(TOPICS, partitions=2, records=300, seed=6)
    spliced = run_model(plan_backfill(make_query("q", "range", TOPICS), 0, 10_000, partitions=2), w)
    by_n = {e.record["n"]: e.record for e in w.events}
    assert spliced and all(r["tuples"][s] == by_n[r["tuples"][s]["n"]] for r in spliced for s in "abc")
    raw = make_query("q", "range", TOPICS)
    selected = parse_query({**dump_query(raw), "select": ["a.n", "c.v"]})
    out = run_model(plan_backfill(selected, 0, 10_000, partitions=2), w)
    assert Counter(r["id"] for r in out) == Counter(r["id"] for r in spliced)
    assert all(set(r["tuples"]) == {"a", "c"} and set(r["tuples"]["a"]) == {"n"} for r in out)


def test_auto_order_replans_as_rates_move_and_keeps_every_result() -> None:
    """A task re-plans as replay does (the same `OperatorFactory`), and its results stay those of a
    written order (the oracle is too slow at this size; written orders are checked against it above)."""
    w = Workload(dict(TOPICS), 1)
    rng = random.Random(8)
    ts, n = 0, 6_000
    for i in range(n):
        weights = [1, 1, 10] if i < n // 2 else [10, 1, 1]  # c frequent, then a
        stream = rng.choices("abc", weights)[0]
        ts += rng.randint(0, 1)
        record = {"ts": ts, "k": rng.randrange(40), "v": rng.randint(0, 9), "g": 0, "n": i}
        w.events.append(Event(stream, 0, i, ts, record))  # offsets grow per stream (gaps are fine)
        w.raw.append((stream, 0, i, 0, json.dumps(record).encode()))
    auto = make_query("q", "range", TOPICS)
    written = parse_query({**dump_query(auto), "order": ["a", "b", "c"]})
    assert auto.order == "auto"

    def run(query: QueryDef) -> tuple[Counter[str], GroupRunner]:
        plan = plan_backfill(query, 0, ts + 1, target_groups=1, partitions=1)
        frame = pd.DataFrame.from_records(feed_rows(plan, w), columns=list(FEED_COLUMNS))
        runner = GroupRunner(plan)
        got: Counter[str] = Counter()
        for out in runner.frames(frame.iloc[i : i + 500] for i in range(0, len(frame), 500)):
            got.update(json.loads(v)["id"] for v in out["value"])
        return got, runner

    got, runner = run(auto)
    want, fixed = run(written)
    assert sum(want.values()) > 200
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    assert runner.planner.replanner.changes >= 1, "the rates moved 10x: the back-fill should re-plan"
    assert fixed.planner.replanner.replans == 0 and fixed.planner.plan.global_order == ("a", "b", "c")


@pytest.mark.parametrize("kind", ["range", "rows", "partitioned"])
def test_chunks_end_between_timestamps(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk ends with an idle flush, which closes the watermark at the newest timestamp fed: a
    chunk cut inside a timestamp would make the rest of it late. Chunks of 7 records cut often."""
    monkeypatch.setattr(stage, "_ADVANCE_EVERY", 7)
    w = make_workload(TOPICS, partitions=3, records=600, seed=3)
    query = make_query("q", kind, TOPICS)
    plan = plan_backfill(query, 0, 10_000, target_groups=4, partitions=3)
    want = Oracle(query, w.events).ids(0, 10_000)
    got = Counter(r["id"] for r in run_model(plan, w))
    assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
