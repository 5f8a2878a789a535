"""`streamjoin backfill` resolves a query's streams as REST does and refuses what it cannot run.

Each refusal exits non-zero with one message that says what is missing, before any Spark starts:
a query written for REST without `--streams` or a registry, a range that needs no archived file
(the archive and range named; the status file, hence the REST job, `failed` with that reason), and
a machine without the `spark` extra (the install step named). With `--streams` the back-fill of a
query written for REST equals the oracle's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from streamjoin.backfill.jobs import BackfillJobs
from streamjoin.dev.ports import free_port

from .workload import WINDOWS, Oracle, make_query, make_workload

TOPICS = {"a": "cli.a", "b": "cli.b", "c": "cli.c"}
# As registered over REST: inputs name streams; the streams declare topic, timestamp and key.
REST_QUERY: dict[str, Any] = {
    "name": "cliq",
    "inputs": [{"stream": s, "window": w} for s, w in WINDOWS["rows"].items()],
    "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"], ["a.v", ">=", "c.v"]],
    "output": {"topic": "cliq.out"},
}
STREAMS = [{"name": s, "topic": t, "timestamp": "ts", "key": "k"} for s, t in TOPICS.items()]


def _backfill(tmp_path: Path, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    (tmp_path / "q.json").write_text(json.dumps(REST_QUERY), encoding="utf-8")
    (tmp_path / "streams.json").write_text(json.dumps(STREAMS), encoding="utf-8")
    code = f"{prelude}\nfrom streamjoin.cli.main import main; main()"
    env = {
        **os.environ,
        "STREAMJOIN_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",  # no registry
        "STREAMJOIN_ARCHIVE_URL": str(tmp_path / "archive"),
    }
    return subprocess.run(
        [sys.executable, "-c", code, "backfill", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )


def test_a_query_written_for_rest_without_its_streams_is_refused(tmp_path: Path) -> None:
    done = _backfill(tmp_path, "q.json", "--from", "0", "--to", "100")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    for needle in ("'a', 'b', 'c' give no \"timestamp\"", "--streams STREAMS.json", "STREAMJOIN_REDIS_URL"):
        assert needle in done.stderr, done.stderr
    (tmp_path / "few.json").write_text(json.dumps(STREAMS[:2]), encoding="utf-8")
    few = _backfill(tmp_path, "q.json", "--streams", "few.json", "--from", "0", "--to", "100")
    assert few.returncode == 2 and "inputs[2].stream: unknown stream 'c'" in few.stderr, few.stderr


def test_a_range_without_archived_files_fails_naming_the_archive_and_range(tmp_path: Path) -> None:
    w = make_workload({"a": "elsewhere.a", "b": "elsewhere.b", "c": "elsewhere.c"}, records=60)
    w.write_archive(str(tmp_path / "archive"))  # other topics only
    status = tmp_path / "status.json"
    done = _backfill(tmp_path, "q.json", "--streams", "streams.json", "--from", "0", "--to", "100",
                     "--status-file", str(status))  # fmt: skip
    assert done.returncode == 1 and done.stdout == "", done.stderr
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert f"the archive at {tmp_path / 'archive'}" in message and "[0, 100)" in message, message
    assert "topic 'cli.a' of input 'a': no file" in message, message
    written = json.loads(status.read_text(encoding="utf-8"))
    assert written["state"] == "failed" and written["error"] == message.removeprefix("streamjoin backfill: ")


def test_the_control_planes_job_over_an_empty_archive_is_failed_with_the_reason(tmp_path: Path) -> None:
    resolved = {
        **REST_QUERY,
        "inputs": [{**i, "topic": TOPICS[i["stream"]], "timestamp": "ts"} for i in REST_QUERY["inputs"]],
    }
    archive = tmp_path / "archive"
    jobs = BackfillJobs(tmp_path / "jobs", env={"STREAMJOIN_ARCHIVE_URL": str(archive)})
    started = jobs.start(resolved, 0, 100)
    done = jobs.wait("cliq", started.id, timeout_s=120)
    assert done.state == "failed", done
    assert done.error is not None and "nothing to back-fill" in done.error and str(archive) in done.error


def test_without_the_spark_extra_the_command_names_the_install_step(tmp_path: Path) -> None:
    # As after the demo's set-up, which installs the package without its `spark` extra.
    missing = "import sys; sys.modules['pandas'] = None; sys.modules['pyspark'] = None"
    done = _backfill(tmp_path, "q.json", "--streams", "streams.json", "--from", "0", "--to", "100",
                     prelude=missing)  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr, done.stderr
    assert "pyspark and pandas are not installed" in done.stderr
    assert ".venv/bin/pip install -e '.[spark]'" in done.stderr, done.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_with_streams_a_query_written_for_rest_is_back_filled_as_the_oracle_says(tmp_path: Path) -> None:
    w = make_workload(TOPICS, partitions=2, records=400, seed=5)
    w.write_archive(str(tmp_path / "archive"))
    out = tmp_path / "out"
    done = _backfill(tmp_path, "q.json", "--streams", "streams.json", "--from", "40", "--to", "160",
                     "--out", str(out), "--tasks", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = Counter(pq.read_table(str(out)).column("id").to_pylist())
    want = Oracle(make_query("cliq", "rows", TOPICS), w.events).ids(40, 160)
    assert want and got == want
