"""`/v1/queries/{name}/backfills`: start a real Spark back-fill over REST and follow it to the end.

The job runs the real `streamjoin backfill` command (its own Spark driver) through the control plane's
job runner; its output must equal the brute-force oracle.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.backfill.workload import Oracle, make_workload

from streamjoin.dev.procscan import pid_alive, zombie
from streamjoin.query import parse_query

from .conftest import StartApi
from .server import ApiServer

QUERY: dict[str, Any] = {
    "name": "pairs",
    "inputs": [
        {"stream": "a", "window": {"range": 100}},
        {"stream": "c", "window": {"range": 100}},
    ],
    "where": [["a.k", "=", "c.k"]],
    "output": {"topic": "pairs.out"},
}


def _register(api: ApiServer) -> None:
    for body in (
        {"name": "a", "topic": "net.a", "timestamp": "ts"},
        {"name": "c", "topic": "net.c", "timestamp": "ts"},
    ):
        assert api.client.post("/v1/streams", json=body).status_code == 201
    assert api.client.post("/v1/queries", json=QUERY).status_code == 201


def test_refusals_name_the_problem(api: ApiServer) -> None:
    assert api.client.post("/v1/queries/nope/backfills", json={"from": 0, "to": 10}).status_code == 404
    assert api.client.get("/v1/queries/nope/backfills").status_code == 404
    _register(api)
    bad = api.client.post("/v1/queries/pairs/backfills", json={"from": 10, "to": 10})
    assert bad.status_code == 422 and "to" in bad.text
    assert api.client.post("/v1/queries/pairs/backfills", json={"to": 10}).status_code == 422
    assert api.anon.post("/v1/queries/pairs/backfills", json={"from": 0, "to": 10}).status_code == 401
    assert api.client.get("/v1/queries/pairs/backfills/0123456789ab").status_code == 404
    assert api.client.get("/v1/queries/pairs/backfills").json() == []


@pytest.mark.slow
def test_a_backfill_started_over_rest_runs_to_the_end(start_api: StartApi, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    workload = make_workload({"a": "net.a", "b": "net.b", "c": "net.c"}, records=300)
    workload.write_archive(str(archive))
    topics = {"inputs": [{**i, "topic": f"net.{i['stream']}", "timestamp": "ts"} for i in QUERY["inputs"]]}
    events = [e for e in workload.events if e.stream in ("a", "c")]
    want = Oracle(parse_query({**QUERY, **topics}), events).ids(0, 1000)
    assert sum(want.values()) > 50
    with start_api(
        archive_url=str(archive), api_backfill_dir=str(tmp_path / "jobs"), api_backfill_out_dir=str(tmp_path)
    ) as api:
        _register(api)
        started = api.client.post(
            "/v1/queries/pairs/backfills", json={"from": 0, "to": 1000, "out": str(tmp_path / "out")}
        )
        assert started.status_code == 202, started.text
        job = started.json()
        assert job["query"] == "pairs" and job["state"] in ("starting", "running")
        # Follow the job's process, not its status over REST (a read of the status would reap it): once
        # it has exited, the control plane (this process) must have waited for it, unasked.
        status = json.loads((tmp_path / "jobs" / "pairs" / job["id"] / "status.json").read_text())
        deadline = time.monotonic() + 300
        while pid_alive(status["pid"]) and time.monotonic() < deadline:
            time.sleep(1)
        time.sleep(1)
        assert not zombie(status["pid"]), "the finished job is a zombie of the control plane"
        job = api.client.get(f"/v1/queries/pairs/backfills/{job['id']}").json()
        assert job["state"] == "succeeded", job
        assert job["progress"] == pytest.approx(1.0) and job["tasks_done"] == job["tasks_total"] > 0
        got = Counter(pq.read_table(tmp_path / "out").column("id").to_pylist())
        assert got == want and job["summary"]["results"] == sum(want.values())
        listed = api.client.get("/v1/queries/pairs/backfills").json()
        assert [j["id"] for j in listed] == [job["id"]]


def test_an_avro_input_without_a_schema_registry_is_refused(
    start_api: StartApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STREAMJOIN_SCHEMA_REGISTRY_URL", raising=False)
    schema = {
        "type": "record",
        "name": "a",
        "fields": [{"name": "ts", "type": "long"}, {"name": "k", "type": "long"}],
    }
    with start_api(schema_registry_url=None, api_backfill_dir=str(tmp_path / "jobs")) as api:
        for body in (
            {"name": "a", "topic": "net.a", "timestamp": "ts", "format": "avro", "schema": schema},
            {"name": "c", "topic": "net.c", "timestamp": "ts"},
        ):
            assert api.client.post("/v1/streams", json=body).status_code == 201
        assert api.client.post("/v1/queries", json=QUERY).status_code == 201
        refused = api.client.post("/v1/queries/pairs/backfills", json={"from": 0, "to": 10})
        assert refused.status_code == 422, refused.text
        assert "Avro input(s) a" in refused.text and "STREAMJOIN_SCHEMA_REGISTRY_URL" in refused.text
        assert api.client.get("/v1/queries/pairs/backfills").json() == []


def test_a_back_fill_into_a_flat_output_topic_is_refused(start_api: StartApi, tmp_path: Path) -> None:
    """The back-fill writes the JSON envelope: into a topic the joiner fills with flat rows it would
    mix two shapes, so that is a 422 naming the format and the way out (`out`: Parquet files)."""
    with start_api(api_backfill_dir=str(tmp_path / "jobs")) as api:
        _register(api)
        flat = {**QUERY, "name": "flat", "output": {"topic": "pairs.out", "format": "flat"}}
        assert api.client.post("/v1/queries", json=flat).status_code == 201
        refused = api.client.post("/v1/queries/flat/backfills", json={"from": 0, "to": 10})
        assert refused.status_code == 422, refused.text
        assert "'flat' output records" in refused.text and "--out" in refused.text
        assert api.client.get("/v1/queries/flat/backfills").json() == []


def _finished(api: ApiServer, job: dict[str, Any], timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while job["state"] not in ("succeeded", "failed", "cancelled") and time.monotonic() < deadline:
        time.sleep(0.5)
        job = api.client.get(f"/v1/queries/{job['query']}/backfills/{job['id']}").json()
    return job


def test_a_backfill_with_nothing_archived_fails_with_the_reason(start_api: StartApi, tmp_path: Path) -> None:
    """A job that would read no archive file is `failed`, its error naming the archive and range."""
    archive = tmp_path / "archive"
    with start_api(archive_url=str(archive), data_dir=str(tmp_path / "data")) as api:
        _register(api)
        started = api.client.post("/v1/queries/pairs/backfills", json={"from": 0, "to": 1000})
        assert started.status_code == 202, started.text
        job = _finished(api, started.json())
    assert job["state"] == "failed", job
    assert (
        "nothing to back-fill" in job["error"]
        and str(archive) in job["error"]
        and "[0, 1000)" in job["error"]
    )


def test_jobs_live_in_the_data_directory(start_api: StartApi, tmp_path: Path) -> None:
    """Without `STREAMJOIN_API_BACKFILL_DIR`, jobs are kept under `STREAMJOIN_DATA_DIR`, never in the
    directory the control plane was started from, and `out` is confined to the data dir's
    `backfill-out`."""
    data = tmp_path / "data"
    before = set(Path.cwd().iterdir())
    with start_api(archive_url=str(tmp_path / "archive"), data_dir=str(data)) as api:
        _register(api)
        started = api.client.post("/v1/queries/pairs/backfills", json={"from": 0, "to": 10, "out": "week"})
        assert started.status_code == 202, started.text
        job = _finished(api, started.json())
        assert job["out"] == str(data / "backfill-out" / "week")
        escape = api.client.post("/v1/queries/pairs/backfills", json={"from": 0, "to": 10, "out": "../x"})
        assert escape.status_code == 422 and str(data / "backfill-out") in escape.text
    assert (data / "backfill-jobs" / "pairs" / job["id"] / "status.json").is_file()
    assert set(Path.cwd().iterdir()) == before
