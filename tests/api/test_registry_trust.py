"""Records written straight to the registry's log topic never become queries, and never stop a restore.

The live stack (the API, a joiner, the broker, Redis): a query is registered over REST; then, with
no credentials, records are produced to the log's topic: a forged query, one with a MAC made with
another key, a forged delete of the real query, a non-JSON record (unsigned, and signed), and a
query signed with the deployment's key whose `within` bound of 1e30 the API refuses. Redis loses
the registry; the restore skips every one of them with its reason, the API and the worker stay (or
become again) ready, the forged queries do not run, the metric and `/readyz` count the refusals,
and the real query (a valid signed entry) is back and running.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from tests.registry.redis_process import RestartableRedis

from streamjoin.dev.ports import free_port
from streamjoin.dev.process import ManagedProcess
from streamjoin.dev.services import streamjoin_argv
from streamjoin.kafka import KafkaClients, KeyedLog

from .forgeries import forgeries, refused
from .server import api_settings, running_api, wait_for
from .test_formats_api import ORDERS

pytest.importorskip("streamjoin.joiner", reason="the joiner (services/streamjoin/joiner/) is not there yet")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

MakeTopic = Callable[..., str]


def _lose_everything(server: RestartableRedis) -> None:
    """Redis restarted empty: killed, its data deleted, started again."""
    server.crash()
    server.wipe()
    server.start()


def test_records_written_straight_to_the_log_are_refused_at_restore(
    restartable_redis: RestartableRedis, make_topic: MakeTopic, kafka_broker: str, tmp_path: Path
) -> None:
    topics = {name: make_topic(f"trust-{name}", partitions=1) for name in ("a", "b", "out")}
    log_topic = make_topic("registry", partitions=1, config={"cleanup.policy": "compact"})
    redis_server = restartable_redis.url
    settings = api_settings(
        redis_server, kafka_broker, api_registry_topic=log_topic, api_registry_check_ms=300
    )
    with running_api(settings) as api:
        for name in ("a", "b"):
            body = {"name": name, "topic": topics[name], "timestamp": "ts"}
            assert api.client.post("/v1/streams", json=body).status_code == 201
        query = {"name": "q", "cql": "SELECT * FROM a [RANGE 1000], b [RANGE 1000] WHERE a.k = b.k"}
        created = api.client.post("/v1/queries", json={**query, "output": {"topic": topics["out"]}})
        assert created.status_code == 201, created.text
        ready_port = free_port()
        argv = streamjoin_argv("joiner", "--bootstrap", kafka_broker, "--redis-url", redis_server)
        argv += [
            "--prefix",
            api.prefix,
            "--group",
            f"trust-{uuid.uuid4().hex[:8]}",
            "--ready-port",
            str(ready_port),
        ]
        joiner = ManagedProcess("joiner", argv, log_path=tmp_path / "joiner.log")
        joiner.start()
        worker_ready = f"http://127.0.0.1:{ready_port}/readyz"
        try:
            wait_for("q to run", lambda: api.anon.get("/v1/queries/q").json()["status"] == "running")
            assert refused(api) == {"unsigned": 0, "bad_signature": 0, "malformed": 0, "invalid": 0}

            log = KeyedLog(KafkaClients(kafka_broker), log_topic)
            try:
                asyncio.run(log.append(forgeries(api.prefix, topics, real="q")))
            finally:
                log.close()
            _lose_everything(restartable_redis)

            wait_for("the restore", lambda: api.anon.get("/v1/queries").status_code == 200)
            wait_for("the API to be ready", lambda: api.anon.get("/readyz").status_code == 200)
            ready = api.anon.get("/readyz")
            (registry,) = [c for c in ready.json()["checks"] if c["name"] == "registry"]
            assert "bad_signature 1, invalid 1, malformed 1, unsigned 3" in registry["detail"], registry
            assert refused(api) == {"unsigned": 3, "bad_signature": 1, "malformed": 1, "invalid": 1}
            assert [q["name"] for q in api.anon.get("/v1/queries").json()] == ["q"]
            for forged in ("forged", "forged_mac", "huge", "garbage", "garbage2"):
                assert api.anon.get(f"/v1/queries/{forged}").status_code == 404

            wait_for("the worker to be ready", lambda: httpx.get(worker_ready, timeout=2).status_code == 200)
            wait_for("q to run again", lambda: api.anon.get("/v1/queries/q").json()["status"] == "running")
            time.sleep(2)  # a worker reports a query it runs within a second: the forged ones would show
            with redis.Redis.from_url(redis_server, decode_responses=True) as store:
                statuses = list(store.scan_iter(match=f"{api.prefix}status:*"))
            assert statuses == [f"{api.prefix}status:q"]
            assert api.anon.get("/readyz").status_code == 200
            assert httpx.get(worker_ready, timeout=2).status_code == 200
            # the registry works on: a write is logged, signed, and survives the next loss
            assert api.client.post("/v1/queries/q/pause").status_code == 200
            _lose_everything(restartable_redis)
            wait_for("the second restore", lambda: api.anon.get("/v1/queries/q").status_code == 200)
            assert api.anon.get("/v1/queries/q").json()["controls"]["paused"] is True
        finally:
            joiner.stop(timeout_ms=10_000)
            print(joiner.log_tail(40))


def test_every_kind_of_registration_passes_the_restore_check(
    restartable_redis: RestartableRedis, make_topic: MakeTopic, kafka_broker: str
) -> None:
    """The restore's check is the registration's: what the API registered, a restore takes back."""
    log_topic = make_topic("registry", partitions=1, config={"cleanup.policy": "compact"})
    settings = api_settings(restartable_redis.url, kafka_broker, api_registry_topic=log_topic)
    schema = {
        "type": "object",
        "properties": {
            "ts": {"type": "number"},
            "src": {"type": "integer"},
            "n": {"type": "number"},
            "tag": {"type": "string"},
        },
    }
    streams = [
        {
            "name": "a",
            "topic": "trust.a",
            "timestamp": "ts",
            "key": "src",
            "expected_rate": 10,
            "record_bytes": 200,
        },
        {
            "name": "b",
            "topic": "trust.b",
            "timestamp": "ts",
            "schema": schema,
            "description": "with a schema",
        },
        {"name": "c", "topic": "trust.c", "timestamp": None},
        {"name": "o", "topic": "trust.o", "timestamp": "ts", "format": "avro", "schema": ORDERS},
    ]
    queries: list[dict[str, Any]] = [
        {"name": "cql", "cql": "SELECT a.src, b.n FROM a [RANGE 100], b [ROWS 5] WHERE a.src = b.src"},
        {
            "name": "sql.x",
            "sql": "SELECT x.src, y.n * 2 AS twice FROM a [RANGE 100] AS x JOIN b [ROWS 50] AS y "
            "ON x.src = y.src WHERE y.n > 1 OR y.tag IN ('web', 'dns')",
            "algorithm": "nlj",
        },
        {
            "name": "within-only",
            "inputs": [{"stream": "a"}, {"stream": "c", "window": {"rows": 10, "partition_by": "src"}}],
            "within": [["a", "c", 5000]],
            "where": [["a.src", "=", "c.src"]],
            "evaluation": {"mode": "lazy", "every": 50},
            "expiration": {"mode": "probe"},
            "lateness": 10,
            "start": "earliest",
            "dead_letter": {"topic": "trust.dead"},
        },
        {
            "name": "shed",
            "inputs": [{"stream": "a", "window": {"range": 100}}, {"stream": "b", "window": {"range": 100}}],
            "where": [["a.src", "=", "b.src"]],
            "shedding": {"memory": 40, "policy": "dgl", "combine": "sum", "seed": 3},
        },
        {
            "name": "avro-out",
            "inputs": [{"stream": "o", "window": {"range": 100}}, {"stream": "b", "window": {"range": 100}}],
            "where": [["o.id", "=", "b.src"]],
            "paused": True,
        },
    ]
    with running_api(settings) as api:
        for body in streams:
            assert api.client.post("/v1/streams", json=body).status_code == 201, body
        for body in queries:
            output: dict[str, Any] = {"topic": f"trust.{body['name']}.out"}
            if body["name"] == "avro-out":
                output["format"] = "avro"
            created = api.client.post("/v1/queries", json={**body, "output": output})
            assert created.status_code == 201, created.text
        patched = api.client.patch("/v1/control/queries/cql", json={"order": ["b", "a"], "paused": True})
        assert patched.status_code == 200, patched.text
        patched = api.client.patch("/v1/control/queries/shed", json={"shedding_memory": 20})
        assert patched.status_code == 200, patched.text
        before = {
            "streams": api.anon.get("/v1/streams").json(),
            "queries": [{**q, "registry_version": 0} for q in api.anon.get("/v1/queries").json()],
        }
        _lose_everything(restartable_redis)
        wait_for("the restore", lambda: api.anon.get("/v1/queries").status_code == 200)
        after = {
            "streams": api.anon.get("/v1/streams").json(),
            "queries": [{**q, "registry_version": 0} for q in api.anon.get("/v1/queries").json()],
        }
        assert after == before
        assert refused(api) == {"unsigned": 0, "bad_signature": 0, "malformed": 0, "invalid": 0}
