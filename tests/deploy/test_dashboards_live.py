"""Every panel query of every dashboard returns data from a real Prometheus that scraped the product.

The control plane, a joiner and the archiver run with the commands of docker-compose.yml on the
embedded broker and Redis; a workload flows through them; Debian's Prometheus scrapes them every
second with the scrape jobs of deploy/prometheus/prometheus.yml. Then each panel's PromQL, with the
Grafana variables set to the workload's query, is evaluated as Grafana would (range queries for graphs,
instant queries for tables) and must return finite values. The `helm test` script runs against the
same deployment.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .alert_rules import alert_names
from .chart import CHART_DIR
from .dashboards import PanelQuery, load_dashboards, panel_queries, substitute
from .live import LiveDeployment, Workload, create_workload_topics, run_workload, values

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUERIES = panel_queries(load_dashboards())
RATE_INTERVAL = "15s"  # $__rate_interval: Grafana's 4 x scrape interval (1 s here)
SCRAPED_FOR_S = 25  # scrapes before the panels are queried, so every rate window is full


@pytest.fixture(scope="module")
def live(
    kafka_broker: str, redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveDeployment, Workload]]:
    """The deployment with a workload flowing, after Prometheus has scraped it for a while."""
    deployment = LiveDeployment(tmp_path_factory.mktemp("live-deployment"), kafka_broker, redis_server)
    try:
        topics = create_workload_topics(kafka_broker)  # before the services, like the topic job
        deployment.start_api()
        workload = run_workload(deployment, topics)
        deployment.start_archiver(list(workload.streams.values()))
        deployment.start_prometheus()
        _wait_for_data(deployment, workload)
        yield deployment, workload
    finally:
        deployment.close()


def _wait_for_data(deployment: LiveDeployment, workload: Workload, timeout_s: float = 120) -> None:
    """Wait until results were scraped for SCRAPED_FOR_S seconds (the joiner publishes every second)."""
    expr = f'count_over_time(streamjoin_results_total{{query="{workload.query}"}}[{SCRAPED_FOR_S}s])'
    deadline = time.monotonic() + timeout_s
    while True:
        counts = values(deployment.promql(expr))
        if counts and min(counts) >= SCRAPED_FOR_S - 3:
            results = values(deployment.promql(f'sum(streamjoin_results_total{{query="{workload.query}"}})'))
            if results and results[0] > 0:
                return
        deployment.check_running()
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no results scraped after {timeout_s}s ({workload.produced} records produced)\n"
                f"{deployment.logs()}"
            )
        time.sleep(1)


@pytest.mark.parametrize("query", QUERIES, ids=[q.id for q in QUERIES])
def test_panel_query_returns_data(live: tuple[LiveDeployment, Workload], query: PanelQuery) -> None:
    deployment, workload = live
    variables = {"query": workload.query, "__rate_interval": RATE_INTERVAL, "__interval": "2s"}
    expr = substitute(query.expr, variables)
    result = deployment.promql(expr, range_s=None if query.instant else 20)
    assert values(result), f"{query.id}: no data for {expr}\n{result}"


def test_services_ran_the_compose_commands(live: tuple[LiveDeployment, Workload]) -> None:
    deployment, _ = live
    assert deployment.commands["api"] == ["streamjoin", "api"]
    assert deployment.commands["joiner"][:2] == ["streamjoin", "joiner"]
    assert deployment.commands["archiver"][:2] == ["streamjoin", "archiver"]


def test_helm_test_script_passes_against_the_deployment(live: tuple[LiveDeployment, Workload]) -> None:
    """The `helm test` pod's script, run here against the live control plane and joiner."""
    deployment, _ = live
    # The image's PATH: `streamjoin` and `python3` with confluent-kafka, here this environment's.
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "streamjoin").exists() and (venv_bin / "python3").exists()
    env = deployment.env(STREAMJOIN_API_URL=deployment.api_url, STREAMJOIN_TEST_TIMEOUT_S="60")
    env["PATH"] = f"{venv_bin}:{env.get('PATH', '/usr/bin:/bin')}"
    script = CHART_DIR / "files" / "helm-test.sh"
    result = subprocess.run(["/bin/sh", str(script)], env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{deployment.logs()}"
    assert "OK:" in result.stdout


def _alert_rules(deployment: LiveDeployment) -> list[dict[str, Any]]:
    body = httpx.get(f"{deployment.prometheus_url}/api/v1/rules", params={"type": "alert"}, timeout=30).json()
    return [rule for group in body["data"]["groups"] for rule in group["rules"]]


def test_alert_rules_evaluate_on_the_real_metrics(live: tuple[LiveDeployment, Workload]) -> None:
    """Prometheus loaded the shipped rules; each evaluates without error on what it scraped.

    The workload has malformed records (about 1 in 200), so StreamjoinDeadLetters fires for its
    query and stream; about 1 in 200 late records stays under StreamjoinLateRecords' 1%; a healthy
    deployment has no critical alert.
    """
    deployment, workload = live
    deadline = time.monotonic() + 60
    while True:
        rules = _alert_rules(deployment)
        firing = [a for r in rules for a in r["alerts"] if a["state"] == "firing"]
        dead = [a for a in firing if a["labels"]["alertname"] == "StreamjoinDeadLetters"]
        if dead or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert sorted(r["name"] for r in rules) == sorted(alert_names())
    assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError")) for r in rules]
    assert {a["labels"]["query"] for a in dead} == {workload.query}, rules
    assert {a["labels"]["stream"] for a in dead} <= set(workload.streams)
    assert not [a for a in firing if a["labels"]["severity"] == "critical"], firing
    assert not [a for a in firing if a["labels"]["alertname"] == "StreamjoinLateRecords"], firing
