"""Switching to the planner's plans mid-stream keeps the result multiset equal to the oracle's.

Reuses the engine suite's random cases and harness (`tests/engine`): plans the `Planner` chose for
random statistics (global orders, GENERAL LAZY local orders, join-graph local orders) are installed
at random points, under every evaluation, expiration and algorithm; and a `Replanner` fed by a
`StatsCollector` re-plans on its own as a stream turns 50x faster.
"""

from __future__ import annotations

import math
import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from engine.harness import COMBINATIONS, diff, run_engine
from engine.profiles import engine_settings
from engine.strategies import Case, cases
from streamjoin.engine import MultiJoin
from streamjoin.planner import Planner, Replanner
from streamjoin.planner.collector import StatsCollector
from streamjoin.planner.graph import JoinGraph
from streamjoin.planner.stats import StreamStats
from streamjoin.query import QueryDef, parse_query
from streamjoin.testing import Event, expected_results, result_key

from .golab import query_of


def _random_stats(query: QueryDef, rnd: random.Random) -> dict[str, StreamStats]:
    graph = JoinGraph.from_query(query)
    out = {}
    for inp in query.inputs:
        fields = {f for c in range(len(graph.classes)) for f in graph.fields(inp.stream, c)}
        window = getattr(inp.window, "range", None)
        out[inp.stream] = StreamStats(
            inp.stream,
            rate=math.exp(rnd.uniform(math.log(0.1), math.log(100))),
            window=window,
            rows=None if window is not None else getattr(inp.window, "rows", 1),
            distinct=rnd.randint(1, 50),
            distinct_fields={f: rnd.randint(1, 50) for f in fields},
        )
    return out


@engine_settings(15)
@given(case=cases(n=(2, 3, 4)), data=st.data())
def test_planner_plans_switched_at_random_points(case: Case, data: st.DataObject) -> None:
    last = max(0, len(case.events) - 1)
    advance_after = data.draw(st.sets(st.integers(0, last)), label="advance_after")
    change_at = data.draw(st.sets(st.integers(0, last), min_size=1, max_size=5), label="plan changes")
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    want = expected_results(case.query, case.events)
    planner = Planner()
    for combo in COMBINATIONS:
        query = parse_query({**case.raw, **combo.fields()})
        plans = {i: planner.plan(query, _random_stats(query, rnd)) for i in sorted(change_at)}
        run = run_engine(query, case.events, advance_after=advance_after, plans=plans)
        assert not run.rejected
        assert run.results == want, f"{combo}, plan changes at {sorted(change_at)}\n" + diff(
            want, run.results, query.stream_names, case.events
        )


def _fluctuating_events(rnd: random.Random, count: int) -> list[Event]:
    """Three streams; `b` turns 50x faster halfway through (event time 0..200)."""
    events: list[Event] = []
    offsets: Counter[str] = Counter()
    ts = 0.0
    for i in range(count):
        rates = {"a": 1.0, "b": 0.2 if i < count // 2 else 10.0, "c": 1.0}
        total = sum(rates.values())
        ts += rnd.expovariate(total)
        stream = rnd.choices(list(rates), weights=list(rates.values()))[0]
        record = {"ts": round(ts, 3), "k": rnd.randrange({"a": 20, "b": 3, "c": 8}[stream])}
        events.append(Event(stream, 0, offsets[stream], record["ts"], record))
        offsets[stream] += 1
    return events


def test_replanner_switches_mid_stream_without_losing_or_duplicating() -> None:
    query = query_of(["a", "b", "c"], [8.0, 8.0, 8.0], algorithm="hash")
    for seed in range(3):
        events = _fluctuating_events(random.Random(seed), 500)
        engine = MultiJoin(query)
        replanner = Replanner(query)
        collector = StatsCollector(query, half_life=4)
        got: Counter[tuple[tuple[int, int], ...]] = Counter()
        for i, e in enumerate(events):
            engine.add(e.stream, dict(e.record), ts=e.ts, offset=e.offset)
            collector.observe(e.stream, e.record, e.ts)
            if i % 10 == 9:
                got.update(result_key(r) for r in engine.advance())
                plan = replanner.observe(collector.snapshot())
                if plan is not None:
                    engine.set_plan(plan)
        got.update(result_key(r) for r in engine.finish())
        want = expected_results(query, events)
        assert sum(want.values()) > 100
        assert got == want, diff(want, got, query.stream_names, events)
        assert replanner.changes >= 1  # the rate jump did change the plan
        assert engine.plan_changes == replanner.changes + 1  # + the initial plan
