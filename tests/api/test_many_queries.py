"""Many queries on one worker: registrations up to the (lowered) cap all run, readiness stays green
throughout, and the next registration is refused with a 409 naming the limit. Real API, joiner,
broker and Redis."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.joiner.harness import readiness

from streamjoin.dev.ports import free_port
from streamjoin.dev.process import ManagedProcess

from .conftest import StartApi

pytest.importorskip("streamjoin.joiner", reason="the joiner is not there yet")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

CAP = 12
CQL = "SELECT * FROM a [RANGE 1000], b [RANGE 1000] WHERE a.k = b.k"


def test_many_queries_keep_the_worker_ready_and_the_cap_holds(
    start_api: StartApi, make_topic: Callable[..., str], kafka_broker: str, redis_server: str, tmp_path: Path
) -> None:
    topics = {name: make_topic(f"many-{name}", partitions=2) for name in ("a", "b")}
    port = free_port()
    with start_api(api_max_queries=CAP) as api:
        for name, topic in topics.items():
            # Keyed by k: the queries read their inputs directly (re-keying 100 queries would also
            # create 200 internal topics and 400 repartitioners, which is not what this test measures).
            body = {"name": name, "topic": topic, "timestamp": "ts", "key": "k"}
            assert api.client.post("/v1/streams", json=body).status_code == 201
        joiner = ManagedProcess(
            "joiner",
            [
                sys.executable, "-c", "from streamjoin.cli.main import main; main()", "joiner",
                "--bootstrap", kafka_broker, "--redis-url", redis_server, "--prefix", api.prefix,
                "--group", f"many-{uuid.uuid4().hex[:8]}", "--worker-id", "w-many",
                "--ready-port", str(port),
            ],
            log_path=tmp_path / "joiner.log",
        )  # fmt: skip
        joiner.start()
        samples: list[bool | None] = []
        try:
            deadline = time.monotonic() + 60
            while readiness(port) is not True:
                assert time.monotonic() < deadline, "the worker never became ready"
                time.sleep(0.2)
            for i in range(CAP):
                body = {
                    "name": f"q{i}",
                    "cql": CQL,
                    "output": {"topic": f"many-out-{i}-{uuid.uuid4().hex[:6]}"},
                }
                assert api.client.post("/v1/queries", json=body).status_code == 201
                samples.append(readiness(port))
            extra = {"name": "one-too-many", "cql": CQL, "output": {"topic": "many-out-x"}}
            refused = api.client.post("/v1/queries", json=extra)
            assert refused.status_code == 409 and "STREAMJOIN_API_MAX_QUERIES" in refused.json()["detail"]
            deadline = time.monotonic() + 90
            while True:
                samples.append(readiness(port))
                statuses = [q["status"] for q in api.client.get("/v1/queries").json()]
                if statuses.count("running") == CAP:
                    break
                assert time.monotonic() < deadline, f"not all running: {statuses}\n{joiner.log_tail(40)}"
                time.sleep(0.5)
            for _ in range(10):  # and it stays ready once they all run
                samples.append(readiness(port))
                time.sleep(0.3)
        finally:
            joiner.stop(timeout_ms=10_000)
        # As a kubelet probes (failureThreshold 3): never "not ready", and never three probes in a row
        # unanswered within their 2 s (one slow answer on a loaded machine is not a failure)
        unanswered_runs = "".join("x" if s is None else "." for s in samples).split(".")
        assert False not in samples and max(map(len, unanswered_runs)) < 3, (
            f"readiness: {samples}\n{joiner.log_tail(40)}"
        )
