"""Runtime changes through the live stack (API, joiner, broker, Redis): each is carried out, or refused.

Issue 16, items 2 to 5: a PATCHed join order is the one that runs; a PUT that reads other inputs is
refused (and one that keeps them takes effect); resume brings the status back to `running` with
every partition on the new registry version; a stuck query says why in its status, its Control
Table and `/metrics`.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from streamjoin.dev.process import ManagedProcess

from .conftest import StartApi
from .server import ApiServer
from .test_joiner_e2e import MakeTopic, _wait, e2e  # noqa: F401  # e2e: the fixture
from .test_results import produce

pytest.importorskip("streamjoin.joiner", reason="the joiner (services/streamjoin/joiner/) is not there yet")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

Stack = tuple[ApiServer, dict[str, str]]


def _register(api: ApiServer, topics: dict[str, str], cql: str | None = None) -> None:
    for name in ("a", "b"):
        body = {"name": name, "topic": topics[name], "timestamp": "ts", "key": "k"}
        assert api.client.post("/v1/streams", json=body).status_code == 201
    query = {
        "name": "q",
        "cql": cql or "SELECT * FROM a [RANGE 100000], b [RANGE 100000] WHERE a.k = b.k",
        "output": {"topic": topics["out"]},
    }
    response = api.client.post("/v1/queries", json=query)
    assert response.status_code == 201, response.text


def _applied(version: int) -> Callable[[dict[str, Any]], bool]:
    """The query's partitions all report a registry version >= `version`."""
    return lambda q: bool(q["partitions"]) and all((p["version"] or 0) >= version for p in q["partitions"])


def _wait_plan(api: ApiServer, predicate: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    plan: dict[str, Any] = {}
    while time.monotonic() < deadline:
        plan = api.anon.get("/v1/queries/q/plan").json()
        if predicate(plan):
            return plan
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {plan}")


def test_pause_then_resume_runs_again_on_the_new_version(e2e: Stack) -> None:  # noqa: F811
    api, topics = e2e
    _register(api, topics)
    _wait(api, lambda q: q["status"] == "running", "the query to run")

    assert api.client.post("/v1/queries/q/pause").status_code == 200
    paused_at = api.call("version")
    _wait(api, _applied(paused_at), "every partition to apply the pause")
    assert {p["state"] for p in api.anon.get("/v1/queries/q").json()["partitions"]} == {"paused"}

    resumed = api.client.post("/v1/queries/q/resume")
    assert resumed.status_code == 200, resumed.text
    version = resumed.json()["registry_version"]
    _wait(
        api,
        lambda q: q["status"] == "running" and _applied(version)(q),
        "the query to run again, every partition on the resume's version",
        timeout_s=30,
    )
    public = api.anon.get("/v1/queries/q").json()
    assert {p["state"] for p in public["partitions"]} == {"running"}
    assert public["reason"] is None


def test_patched_order_is_the_order_that_runs(e2e: Stack) -> None:  # noqa: F811
    api, topics = e2e
    _register(api, topics)
    _wait(api, lambda q: q["status"] == "running", "the query to run")
    first = _wait_plan(api, lambda p: p["planned"], "a first plan")
    wanted = list(reversed(first["global_order"]))

    patched = api.client.patch("/v1/control/queries/q", json={"order": wanted})
    assert patched.status_code == 200, patched.text
    plan = _wait_plan(api, lambda p: p["global_order"] == wanted, f"the joiner to run {wanted}")
    assert plan["requested_order"] == wanted

    assert api.client.post("/v1/queries/q/replan").status_code == 202
    replanned = _wait_plan(api, lambda p: p["replan_pending"] is None, "the re-plan to be handled")
    assert replanned["global_order"] == wanted  # a written order is kept by a re-plan
    table = api.anon.get("/v1/control/operators/q").json()["attributes"]
    assert table["global_order"] == wanted and table["order"] == wanted


def test_put_with_other_inputs_is_refused_and_one_with_the_same_takes_effect(
    e2e: Stack,  # noqa: F811
    make_topic: MakeTopic,
    kafka_broker: str,
) -> None:
    api, topics = e2e
    _register(api, topics)
    c_topic = make_topic("e2e-c", partitions=1)
    stream = {"name": "c", "topic": c_topic, "timestamp": "ts", "key": "k"}
    assert api.client.post("/v1/streams", json=stream).status_code == 201
    _wait(api, lambda q: q["status"] == "running", "the query to run")

    other = {
        "cql": "SELECT * FROM a [RANGE 100000], c [RANGE 100000] WHERE a.k = c.k",
        "output": {"topic": topics["out"]},
    }
    refused = api.client.put("/v1/queries/q", json=other)
    assert refused.status_code == 409, refused.text
    assert "delete" in refused.text.lower() and "register it again" in refused.text
    public = api.anon.get("/v1/queries/q").json()
    assert public["revision"] == 1 and "FROM a [RANGE 100000], b" in public["cql"]

    # The same inputs with another window and output topic: the old operators stop, state is reset.
    out2 = make_topic("e2e-out2", partitions=1)
    same = {
        "cql": "SELECT * FROM a [RANGE 50000], b [RANGE 50000] WHERE a.k = b.k",
        "output": {"topic": out2},
    }
    replaced = api.client.put("/v1/queries/q", json=same)
    assert replaced.status_code == 200, replaced.text
    version = replaced.json()["registry_version"]
    _wait(
        api,
        lambda q: q["revision"] == 2 and q["status"] == "running" and _applied(version)(q),
        "the new definition to run",
    )
    produce(kafka_broker, topics["a"], [{"k": 1, "ts": 1_000}])
    time.sleep(1)
    produce(kafka_broker, topics["b"], [{"k": 1, "ts": 1_010}])
    params = {"format": "ndjson", "from": "earliest", "limit": 1, "timeout_ms": 30_000}
    lines = api.anon.get("/v1/queries/q/results", params=params, timeout=60).text.splitlines()
    results = [json.loads(line) for line in lines if line.strip()]
    assert [r["tuples"]["a"]["k"] for r in results] == [1], lines
    assert api.anon.get("/v1/queries/q").json()["status"] == "running"  # no failing loop


def test_a_missing_input_topic_shows_in_status_control_table_and_metrics(
    e2e: Stack,  # noqa: F811
    make_topic: MakeTopic,
) -> None:
    api, topics = e2e
    missing = f"e2e-missing.{uuid.uuid4().hex[:12]}"
    for name, topic in (("a", topics["a"]), ("m", missing)):
        stream = {"name": name, "topic": topic, "timestamp": "ts", "key": "k"}
        assert api.client.post("/v1/streams", json=stream).status_code == 201
    query = {
        "name": "q",
        "cql": "SELECT * FROM a [RANGE 1000], m [RANGE 1000] WHERE a.k = m.k",
        "output": {"topic": topics["out"]},
    }
    assert api.client.post("/v1/queries", json=query).status_code == 201
    _wait(api, lambda q: q["status"] == "failing", "the query to report it is stuck")
    public = api.anon.get("/v1/queries/q").json()
    reason = public["reason"]
    assert missing in reason["error"] and "missing" in reason["error"], public
    assert reason["partition"] is None and reason["since"] is not None and reason["since"] <= time.time()

    table = api.anon.get("/v1/control/queries/q").json()["attributes"]
    assert table["status"] == "failing" and missing in table["status_reason"]
    assert table["status_since"] == reason["since"]
    metrics = api.anon.get("/metrics").text
    assert 'streamjoin_queries{status="failing"} 1.0' in metrics
    assert 'streamjoin_queries{status="running"} 0.0' in metrics

    # Deleted, the query leaves no status behind (the worker forgets its problem).
    assert api.client.delete("/v1/queries/q").status_code == 204
    time.sleep(3)
    assert api.call("read_status", "q") == []


def test_a_failing_operator_shows_its_error_partition_and_since_then_recovers(
    e2e: Stack,  # noqa: F811
    kafka_broker: str,
    redis_server: str,
) -> None:
    api, topics = e2e
    _register(api, topics)
    _wait(api, lambda q: q["status"] == "running", "the query to run")
    meta = f"{api.prefix}{{0}}:state:q:meta"  # the operator's checkpoint of partition 0
    with redis.Redis.from_url(redis_server) as r:
        assert r.type(meta) == b"hash"
        r.delete(meta)
        r.set(meta, "not a checkpoint")  # every commit and every claim now fails (WRONGTYPE)
        produce(kafka_broker, topics["a"], [{"k": 1, "ts": 1_000}])
        _wait(api, lambda q: q["status"] == "failing", "the query to report the failing operator")
        public = api.anon.get("/v1/queries/q").json()
        (partition,) = public["partitions"]
        assert partition["state"] == "failing" and "WRONGTYPE" in partition["error"], public
        reason = public["reason"]
        assert reason["partition"] == 0 and "WRONGTYPE" in reason["error"]
        assert reason["since"] == partition["error_since"] and reason["since"] <= time.time()
        time.sleep(2.5)  # retries keep the first failure's time
        again = api.anon.get("/v1/queries/q").json()
        assert again["status"] == "failing" and again["reason"]["since"] == reason["since"]
        table = api.anon.get("/v1/control/queries/q").json()["attributes"]
        assert table["status"] == "failing" and table["status_partition"] == 0
        assert "WRONGTYPE" in table["status_reason"]
        metrics = api.anon.get("/metrics").text
        assert 'streamjoin_queries{status="failing"} 1.0' in metrics
        assert 'streamjoin_partition_failing_seconds{partition="0",query="q"}' in metrics, metrics

        r.delete(meta)  # repaired: the next attempt starts afresh
    _wait(api, lambda q: q["status"] == "running", "the query to run again")
    public = api.anon.get("/v1/queries/q").json()
    assert public["reason"] is None and public["partitions"][0]["error"] is None


def _joiner(api: ApiServer, kafka_broker: str, redis_server: str, log: Path, worker: str) -> ManagedProcess:
    return ManagedProcess(
        "joiner",
        [
            sys.executable, "-c", "from streamjoin.cli.main import main; main()", "joiner",
            "--bootstrap", kafka_broker, "--redis-url", redis_server, "--prefix", api.prefix,
            "--group", f"rt-{uuid.uuid4().hex[:8]}", "--worker-id", worker,
        ],
        log_path=log,
    )  # fmt: skip


def test_a_worker_that_lets_its_partitions_go_says_so_until_another_runs_them(
    start_api: StartApi, make_topic: MakeTopic, kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    topics = {name: make_topic(f"rt-{name}", partitions=2) for name in ("a", "b", "out")}
    with start_api() as api:
        first = _joiner(api, kafka_broker, redis_server, tmp_path / "w1.log", "w1")
        first.start()
        try:
            _register(api, topics)
            _wait(api, lambda q: q["status"] == "running", "the query to run")
        finally:
            first.stop(timeout_ms=10_000)
        public = api.anon.get("/v1/queries/q").json()
        assert public["status"] == "positioning", public
        assert {p["partition"] for p in public["partitions"]} == {0, 1}
        assert all("released by worker w1 (the worker stopped)" in p["error"] for p in public["partitions"])
        assert (
            public["reason"]["partition"] in (0, 1) and "no worker runs it yet" in public["reason"]["error"]
        )

        second = _joiner(api, kafka_broker, redis_server, tmp_path / "w2.log", "w2")
        second.start()
        try:
            _wait(api, lambda q: q["status"] == "running", "another worker to run the query")
            public = api.anon.get("/v1/queries/q").json()
            assert public["reason"] is None
            assert {(p["worker"], p["error"]) for p in public["partitions"]} == {("w2", None)}
        finally:
            second.stop(timeout_ms=10_000)
