"""The worker plans off its event loop: a 24-input query's search does not stall other coroutines."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from streamjoin.joiner.worker.planning import replan_off_loop
from streamjoin.operator import OperatorFactory
from streamjoin.operator.planning import QueryPlanner
from streamjoin.planner import PlannerOptions, Replanner
from streamjoin.query import parse_query

N = 24
BOUND_MS = 2_000


def _query() -> Any:
    names = [f"s{i}" for i in range(N)]
    return parse_query(
        {
            "name": "wide",
            "inputs": [
                {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 100}} for s in names
            ],
            "where": [[f"{a}.k", "=", f"{b}.k"] for a, b in itertools.pairwise(names)],
            "algorithm": "nlj",
            "output": {"topic": "out"},
        }
    )


async def _ticks(stop: asyncio.Event, gaps: list[float]) -> None:
    last = time.monotonic()
    while not stop.is_set():
        await asyncio.sleep(0.01)
        now = time.monotonic()
        gaps.append(now - last)
        last = now


def test_planning_a_24_input_query_does_not_block_the_loop() -> None:
    query = _query()
    planner = QueryPlanner(query, Replanner(query, planner=None))
    planner.replanner.planner.options = PlannerOptions(time_limit_ms=BOUND_MS)
    factory = OperatorFactory(query, planner=planner, replan_every=None)
    op = factory.build()
    for t in range(300):  # skewed rates, so the heuristic has fast streams to place
        for i in range(N):
            for j in range(1 + (10 if i % 7 == 0 else 0)):
                key = 100 * i + (t + j) % 13  # no two streams share a key: no results to join
                op.add(f"s{i}", {"ts": t, "k": key}, ts=t, offset=t * 100 + j)
        op.advance()
    assert op.collector is not None

    async def main() -> tuple[Any, float, list[float]]:
        stop, gaps = asyncio.Event(), []
        ticker = asyncio.create_task(_ticks(stop, gaps))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        plan = await replan_off_loop(planner, [op.collector], force=True)
        took = time.monotonic() - started
        stop.set()
        await ticker
        return plan, took, gaps

    plan, took, gaps = asyncio.run(main())
    assert plan is not None and plan.reason is not None
    assert plan.reason.startswith("heuristic (24 inputs"), plan.reason
    assert took < BOUND_MS / 1000 + 1.0, f"planning took {took:.2f} s with a {BOUND_MS} ms bound"
    # the loop kept ticking every 10 ms while the search ran (a blocked loop shows one gap ~ `took`)
    assert len(gaps) >= took / 0.05, (len(gaps), took)
    # (a blocked loop stalls for the whole search, about BOUND_MS; 0.27 s was seen on a loaded machine)
    assert max(gaps) < 0.5, f"the loop stalled {max(gaps):.3f} s"
