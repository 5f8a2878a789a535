"""A W-join query over REST through a live joiner: `within` pairs, a windowless input, the plan's bounds.

The API, a `streamjoin joiner` process, the embedded broker and Redis, all real (the fixture of
`test_joiner_e2e.py`).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from .server import ApiServer
from .test_joiner_e2e import _read_topic, _results, _wait, register_streams
from .test_joiner_e2e import e2e as e2e  # the fixture
from .test_results import produce

pytest.importorskip("streamjoin.joiner", reason="the joiner (services/streamjoin/joiner/) is not there yet")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_a_wjoin_query_runs_in_the_live_joiner(
    e2e: tuple[ApiServer, dict[str, str]], kafka_broker: str
) -> None:
    api, topics = e2e
    register_streams(api, topics)
    unbounded = {
        "name": "q",
        "inputs": [{"stream": "a"}, {"stream": "b", "window": {"range": 50}}],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": topics["out"]},
    }
    refused = api.client.post("/v1/queries", json=unbounded)
    assert refused.status_code == 422, refused.text
    assert "'a'" in refused.text  # names the input whose records could be needed forever
    query = {
        **unbounded,
        "inputs": [{"stream": "a"}, {"stream": "b", "window": {"range": 50, "strict": True}}],
        "within": [["a", "b", 20]],
        "expiration": {"mode": "probe_insert"},
    }
    created = api.client.post("/v1/queries", json=query)
    assert created.status_code == 201, created.text
    _wait(api, lambda q: q["status"] == "running", "the query to run")
    plan = api.anon.get("/v1/queries/q/plan").json()
    assert plan["bounds"] == [{"streams": ["a", "b"], "bound": 20, "given": 20, "path": ["a", "b"]}]

    sse = {"Accept": "text/event-stream"}
    with api.anon.stream(
        "GET", "/v1/queries/q/results", params={"limit": 2, "timeout_ms": 30_000}, headers=sse
    ) as r:
        # Every b is newer than every a (a goes idle after 1 s, so an older b would be late).
        produce(
            kafka_broker, topics["a"], [{"k": 1, "ts": 1_100}, {"k": 2, "ts": 1_290}, {"k": 3, "ts": 1_300}]
        )
        time.sleep(1)
        # b: 20 after a (joins: |d| <= 20), 21 after (too far for `within`), and a key of a's too old.
        b = [{"k": 2, "ts": 1_310}, {"k": 3, "ts": 1_320}, {"k": 3, "ts": 1_321}, {"k": 1, "ts": 1_330}]
        produce(kafka_broker, topics["b"], b)
        got = _results(r)
    pairs = sorted((x["tuples"]["a"]["ts"], x["tuples"]["b"]["ts"]) for x in got)
    assert pairs == [(1_290, 1_310), (1_300, 1_320)]
    on_topic = asyncio.run(_read_topic(kafka_broker, topics["out"], 3))  # waits for a third: none comes
    assert sorted((x["tuples"]["a"]["ts"], x["tuples"]["b"]["ts"]) for x in on_topic) == pairs
