"""streamjoin on a broker that requires SASL/SCRAM logins and ACLs, end to end.

The `streamjoin` user gets exactly `streamjoin_acls` (docs/deploy.md, "ACLs"); `streamjoin topics
create`, the control plane and a joiner log in as it from their settings (`STREAMJOIN_KAFKA_*`); a
query registered over REST joins what the admin produces, and its results, read back through the
control plane's results endpoint, are the oracle's.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest
from tests.joiner.harness import expected_ids, wait_running
from tests.kafka.sasl import SecuredNames, grant_streamjoin, produce_as, write_catalog

from streamjoin.dev.kafka_security import SecuredKafka
from streamjoin.dev.process import ManagedProcess
from streamjoin.dev.services import EmbeddedApi, streamjoin_argv
from streamjoin.kafka import Admin
from streamjoin.query import parse_query

pytestmark = pytest.mark.timeout(300)

PARTITIONS = 2


def _workload(names: SecuredNames) -> tuple[dict[str, object], list[tuple[str, int, dict[str, int]]]]:
    """A 2-way equi-join on `k` (records on partition `k % 2`), eager, and the records to produce."""
    query = {
        "name": f"q{names.run}",
        "inputs": [
            {"stream": f"a{names.run}", "window": {"range": 50}},
            {"stream": f"b{names.run}", "window": {"range": 50}},
        ],
        "where": [[f"a{names.run}.k", "=", f"b{names.run}.k"]],
        "output": {"topic": names.output},
        "dead_letter": {"topic": names.dead_letter},
        "start": "earliest",
    }
    items = [
        (stream, k % PARTITIONS, {"ts": n, "k": k, "n": n})
        for n in range(120)
        for stream, k in ((f"a{names.run}", n % 7), (f"b{names.run}", (n * 3) % 7))
    ]
    # One far-future record per stream and partition moves the watermark past the rest.
    items += [
        (f"{s}{names.run}", p, {"ts": 10_000_000, "k": 1_000 + 2 * i + p, "n": -1})
        for i, s in enumerate("ab")
        for p in range(PARTITIONS)
    ]
    return query, items


def test_streamjoin_runs_with_scram_credentials_and_only_its_acls(
    secured_kafka: SecuredKafka, redis_server: str, tmp_path: Path
) -> None:
    names = SecuredNames.fresh(["a", "b"])
    streams = {f"{s}{names.run}": names.inputs[s] for s in "ab"}
    grant_streamjoin(secured_kafka, names)
    env = {**secured_kafka.env("streamjoin"), "STREAMJOIN_REDIS_URL": redis_server}

    # The topic job, as the streamjoin user.
    catalog = write_catalog(tmp_path / "topics.json", names, PARTITIONS)
    created = subprocess.run(
        [*streamjoin_argv("topics", "create", "--file", str(catalog))],
        env={**_clean_environ(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stdout + created.stderr
    on_broker = Admin(
        secured_kafka.bootstrap, client_config=secured_kafka.security.librdkafka("admin")
    ).topics()
    assert {names.output, names.dead_letter, *names.inputs.values()} <= set(on_broker)

    api = EmbeddedApi({**env, "STREAMJOIN_API_REGISTRY_PREFIX": names.prefix})
    joiner = ManagedProcess(
        "joiner",
        streamjoin_argv(
            *("joiner", "--group", names.group, "--prefix", names.prefix, "--worker-id", f"sasl-{names.run}"),
            # An input that has not been written yet does not go idle (and let the other one's
            # records make it late) while the test produces.
            *("--idle-timeout-ms", "60000"),
        ),
        log_path=tmp_path / "joiner.log",
        env={**_clean_environ(), **env},
    )
    try:
        api.start(tmp_path)
        client = httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {api.token}"}, timeout=60)
        for name, topic in streams.items():
            response = client.post(
                "/v1/streams", json={"name": name, "topic": topic, "timestamp": "ts", "key": "k"}
            )
            assert response.status_code == 201, response.text
        query, items = _workload(names)
        response = client.post("/v1/queries", json=query)
        assert response.status_code == 201, response.text
        joiner.start()
        asyncio.run(wait_running(redis_server, names.prefix, str(query["name"]), PARTITIONS, timeout_s=120))

        events = produce_as(secured_kafka.client_config("admin"), streams, items)
        want = expected_ids(parse_query({**query, "inputs": _inputs(query, streams)}), events)
        assert sum(want.values()) > 50
        results = client.get(
            f"/v1/queries/{query['name']}/results",
            params={
                "from": "earliest",
                "limit": sum(want.values()),
                "timeout_ms": 60_000,
                "format": "ndjson",
            },
            timeout=90,
        )
        assert results.status_code == 200, results.text
        got = Counter(json.loads(line)["id"] for line in results.text.splitlines() if line)
        assert got == want, f"missing {sum((want - got).values())}, extra {sum((got - want).values())}"
    except BaseException:
        sys.stderr.write(f"--- api log ---\n{api.process.log_tail() if api.process else ''}\n")
        sys.stderr.write(f"--- joiner log ---\n{joiner.log_tail()}\n")
        raise
    finally:
        joiner.stop(timeout_ms=10_000)
        api.stop(timeout_ms=10_000)


def _inputs(query: dict[str, object], streams: dict[str, str]) -> list[dict[str, object]]:
    """The query's inputs with their topics and timestamps, as the oracle's parser wants them."""
    inputs = query["inputs"]
    assert isinstance(inputs, list)
    return [{**i, "topic": streams[i["stream"]], "timestamp": "ts", "key": "k"} for i in inputs]


def _clean_environ() -> dict[str, str]:
    """This process's environment without STREAMJOIN_* variables (the test sets its own)."""
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("STREAMJOIN_")}
