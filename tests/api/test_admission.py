"""Admission under concurrent registrations: the queries cap and the pending backlog hold however many
requests race (they are checked in the registry's atomic write), and a refused registration writes
nothing, neither to Redis nor to the registry's log. Real API, broker and Redis."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import httpx

from streamjoin.registry import KafkaRegistryLog

from .conftest import StartApi
from .server import ApiServer, run


def _query(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "inputs": [{"stream": s, "window": {"range": 1_000}} for s in ("a", "b")],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": f"adm.{name}.out"},
    }


def _streams(api: ApiServer) -> None:
    for s in ("a", "b"):
        body = {"name": s, "topic": f"adm.{s}", "timestamp": "ts", "key": "k"}
        assert api.client.post("/v1/streams", json=body).status_code == 201


def _flood(api: ApiServer, names: list[str]) -> list[httpx.Response]:
    """POST every query at once (one connection each), as a burst of clients would."""

    async def go() -> list[httpx.Response]:
        headers = dict(api.client.headers)
        limits = httpx.Limits(max_connections=len(names))
        async with httpx.AsyncClient(base_url=api.url, headers=headers, timeout=60, limits=limits) as c:
            return list(await asyncio.gather(*(c.post("/v1/queries", json=_query(n)) for n in names)))

    return run(go())


def _logged_queries(api: ApiServer, topic: str) -> set[str]:
    async def read() -> set[str]:
        log = KafkaRegistryLog.from_settings(api.settings, topic)
        try:
            entries = await log.read()
        finally:
            log.close()
        return {e.key.rsplit(":", 1)[1] for e in entries if e.key.startswith(f"{api.prefix}query:")}

    return run(read())


def test_concurrent_registrations_never_pass_the_cap(
    start_api: StartApi, make_topic: Callable[..., str]
) -> None:
    log_topic = make_topic("adm-log", partitions=1, config={"cleanup.policy": "compact"})
    with start_api(api_max_queries=5, api_max_pending_queries=1_000, api_registry_topic=log_topic) as api:
        _streams(api)
        answers = _flood(api, [f"q{i}" for i in range(40)])
        codes = sorted(r.status_code for r in answers)
        assert codes == [201] * 5 + [409] * 35, codes
        for refused in (r for r in answers if r.status_code == 409):
            body = refused.json()
            assert body["code"] == "limit_exceeded" and "STREAMJOIN_API_MAX_QUERIES" in body["detail"]
        admitted = {r.json()["name"] for r in answers if r.status_code == 201}
        assert {q["name"] for q in api.client.get("/v1/queries").json()} == admitted
        assert _logged_queries(api, log_topic) == admitted  # the refused ones never reached the log


def test_registrations_beyond_the_pending_backlog_get_a_429_and_change_nothing(
    start_api: StartApi,
) -> None:
    with start_api(api_max_pending_queries=3, api_pending_retry_after_s=7) as api:
        _streams(api)
        answers = _flood(api, [f"p{i}" for i in range(20)])  # no worker runs: every query stays pending
        assert sorted(r.status_code for r in answers) == [201] * 3 + [429] * 17
        refused = next(r for r in answers if r.status_code == 429)
        assert refused.headers["Retry-After"] == "7"
        assert refused.json()["code"] == "too_many_pending"
        assert "too many pending registrations" in refused.json()["detail"]
        assert "STREAMJOIN_API_MAX_PENDING_QUERIES" in refused.json()["detail"]

        before = api.dump()
        again = api.client.post("/v1/queries", json=_query("late"))
        assert again.status_code == 429 and api.dump() == before

        # a worker lays one out (reports a status): room for exactly one more
        first = next(r.json()["name"] for r in answers if r.status_code == 201)
        api.call("set_status", first, 0, worker="w", state="positioning", partitions=1, version=1)
        names = (f"r{i}" for i in itertools.count())
        codes = sorted(r.status_code for r in _flood(api, [next(names) for _ in range(5)]))
        assert codes == [201] + [429] * 4, codes
        assert len(api.client.get("/v1/queries").json()) == 4
