"""The back-fill on a Spark standalone cluster (a master and two 1-core workers on loopback) (slow).

The same archive is back-filled two ways: submitted with `spark-submit --master spark://...` (the
package shipped with `--py-files`), and run by the back-fill's script with `STREAMJOIN_SPARK_MASTER`
pointing at the cluster; both multisets of result ids equal the brute-force oracle (local mode is
checked against it in test_spark.py). The master's own state proves the two cluster runs ran there,
on executors of both workers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import streamjoin
from streamjoin.query.dump import dump_query

from .cluster import SparkStandalone
from .test_spark import read_ids
from .workload import Oracle, make_query, make_workload

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TOPICS = {"a": "cl.a", "b": "cl.b", "c": "cl.c"}
START, END = 120, 2_500


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    """Start a master and two workers (1 core, 768 MiB each); stop them at the end of the module."""
    pytest.importorskip("pyspark")
    spark_cluster = SparkStandalone(tmp_path_factory.mktemp("spark-cluster"), workers=2)
    try:
        spark_cluster.start()
        yield spark_cluster
    finally:
        spark_cluster.stop()


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Counter[str]]:
    """Write a workload into an archive; return its URL, the query file and the oracle's ids."""
    w = make_workload(TOPICS, partitions=3, records=700, keys=15, seed=23, malformed=12)
    root = tmp_path_factory.mktemp("cluster-archive")
    url = str(root / "archive")
    w.write_archive(url)
    query = make_query("qcluster", "rows", TOPICS)
    query_file = root / "query.json"
    query_file.write_text(json.dumps(dump_query(query)), encoding="utf-8")
    want = Oracle(query, w.events).ids(START, END)
    assert sum(want.values()) > 50
    return url, query_file, want


def _package_zip(tmp: Path) -> Path:
    """Zip the imported `streamjoin` package, as a user ships it to the executors with `--py-files`."""
    package = Path(streamjoin.__file__).parent
    return Path(shutil.make_archive(str(tmp / "streamjoin"), "zip", package.parent, package.name))


def _apps(cluster: SparkStandalone) -> list[dict[str, Any]]:
    return [a for a in cluster.status()["completedapps"] if a["name"] == "streamjoin-backfill"]


def _run(argv: list[str], env: dict[str, str], cluster: SparkStandalone) -> dict[str, Any]:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=420, check=False)
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{cluster.log_tail()}"
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def test_spark_submit_equals_the_oracle(
    cluster: SparkStandalone, archived: tuple[str, Path, Counter[str]], tmp_path: Path
) -> None:
    url, query_file, want = archived
    script = Path(sys.executable).parent / "spark-submit"
    entry = Path(streamjoin.__file__).parent / "cli" / "spark_submit.py"
    before = len(_apps(cluster))
    env = cluster.env({"STREAMJOIN_ARCHIVE_URL": url, "PYSPARK_PYTHON": sys.executable})
    env.pop("STREAMJOIN_SPARK_MASTER", None)
    summary = _run(
        [str(script), "--master", cluster.url, "--py-files", str(_package_zip(tmp_path)), str(entry),
         str(query_file), "--from", str(START), "--to", str(END), "--tasks", "2",
         "--out", str(tmp_path / "cluster")],
        env,
        cluster,
    )  # fmt: skip
    got_cluster, _ = read_ids(tmp_path / "cluster")
    assert summary["results"] == sum(want.values()) and summary["duplicates"] == 0
    missing, extra = sum((want - got_cluster).values()), sum((got_cluster - want).values())
    assert got_cluster == want, f"missing {missing}, extra {extra}"
    apps = _apps(cluster)
    assert len(apps) == before + 1
    assert apps[-1]["cores"] == 2 and apps[-1]["state"] == "FINISHED"  # an executor on each worker


def test_spark_master_setting_selects_the_cluster(
    cluster: SparkStandalone, archived: tuple[str, Path, Counter[str]], tmp_path: Path
) -> None:
    url, query_file, want = archived
    before = len(_apps(cluster))
    env = cluster.env(
        {"STREAMJOIN_ARCHIVE_URL": url, "STREAMJOIN_SPARK_MASTER": cluster.url, "PYTHONPATH": _pythonpath()}
    )
    summary = _run(
        [sys.executable, "-m", "streamjoin.cli.spark_submit", str(query_file), "--from", str(START),
         "--to", str(END), "--tasks", "2", "--out", str(tmp_path / "env")],
        env,
        cluster,
    )  # fmt: skip
    got, _ = read_ids(tmp_path / "env")
    assert got == want and summary["results"] == sum(want.values())
    apps = _apps(cluster)
    assert len(apps) == before + 1 and apps[-1]["cores"] == 2


def test_bad_master_is_refused_before_spark_starts(tmp_path: Path) -> None:
    query_file = tmp_path / "q.json"
    query_file.write_text(json.dumps(dump_query(make_query("qbad", "range", TOPICS))), encoding="utf-8")
    for argv, extra in (
        (["--master", "spark//nohost"], {}),
        ([], {"STREAMJOIN_SPARK_MASTER": "sprak://127.0.0.1:7077"}),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "streamjoin.cli.spark_submit", str(query_file), "--from", "1", "--to", "2",
             "--out", str(tmp_path / "out"), *argv],
            env={**_env_without_master(), **extra, "PYTHONPATH": _pythonpath()},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "is not a Spark master URL" in done.stderr
        assert not (tmp_path / "out").exists()


def _pythonpath() -> str:
    """Return a PYTHONPATH that imports this checkout's `streamjoin` first."""
    return str(Path(streamjoin.__file__).parent.parent)


def _env_without_master() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "STREAMJOIN_SPARK_MASTER"}
