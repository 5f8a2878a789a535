"""Redis persistence: compose and the chart run Redis the way exactly-once needs (AOF, fsync always).

docs/exactly-once.md, "Redis persistence", says why: with `everysec` or RDB snapshots a Redis crash
can roll the operators' checkpoints back behind results already published.
"""

from __future__ import annotations

import json
from typing import Any

from .chart import load_values_file
from .dashboards import REPO_ROOT


def _options(argv: list[str]) -> dict[str, str]:
    """Return `redis-server --name value ...` as {name: value}."""
    flags = [a for a in argv if a.startswith("--")]
    return {f[2:]: argv[argv.index(f) + 1] for f in flags}


def test_compose_runs_redis_with_an_fsync_per_write(compose: dict[str, Any]) -> None:
    command = compose["services"]["redis"]["command"]
    argv = command if isinstance(command, list) else command.split()
    if argv[:2] == ["sh", "-c"]:  # the password read from the environment by a shell
        argv = argv[2].replace('"', "").split()
    options = _options(argv)
    assert (options["appendonly"], options["appendfsync"]) == ("yes", "always"), argv
    assert compose["services"]["redis"]["volumes"], "the AOF must be on a volume"


def test_the_in_cluster_redis_of_the_chart_fsyncs_every_write() -> None:
    values = load_values_file("values.yaml")["redisInCluster"]
    lines = {line.strip() for line in values["commonConfiguration"].splitlines()}
    assert {"appendonly yes", "appendfsync always"} <= lines
    assert values["master"]["persistence"]["enabled"] is True


def test_the_registry_log_is_a_declared_compacted_topic() -> None:
    topics = {t["name"]: t for t in json.loads((REPO_ROOT / "topics" / "topics.json").read_text())["topics"]}
    registry = topics["streamjoin.registry"]
    assert registry["config"]["cleanup.policy"] == "compact" and registry["partitions"] == 1


def test_the_joiners_progress_markers_are_a_declared_compacted_topic() -> None:
    topics = {t["name"]: t for t in json.loads((REPO_ROOT / "topics" / "topics.json").read_text())["topics"]}
    positions = topics["streamjoin.positions"]
    assert positions["config"]["cleanup.policy"] == "compact" and positions["partitions"] == 1
