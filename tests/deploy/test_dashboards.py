"""The Grafana dashboards, statically: every metric exists, every query parses, the issue's panels exist.

The live test (`test_dashboards_live.py`) runs every query against a real Prometheus; these checks
need nothing running.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from .dashboards import load_dashboards, metric_names, panel_queries, substitute

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
QUERIES = panel_queries(load_dashboards())
VARIABLES = {
    "query": "q",
    "stream": "s",
    "datasource": "prometheus",
    "__rate_interval": "1m",
    "__interval": "15s",
}

# What issue #8 asks each dashboard to show, as the metrics that show it.
REQUIRED = {
    "overview": {
        "input rate per stream": "streamjoin_input_records_total",
        "results per query": "streamjoin_results_total",
        "latency percentiles": "streamjoin_processing_latency_seconds_bucket",
        "consumer lag": "streamjoin_consumer_lag_records",
        "watermark lag": "streamjoin_watermark_lag_seconds",
        "late records": "streamjoin_late_records_total",
        "malformed records": "streamjoin_malformed_records_total",
    },
    "query": {
        "window sizes": "streamjoin_window_records",
        "distinct keys": "streamjoin_window_distinct_keys",
        "join order": "streamjoin_plan_info",
        "plan changes": "streamjoin_plan_changes_total",
        "estimated cost": "streamjoin_plan_estimated_cost",
        "observed cost": "streamjoin_plan_observed_cost",
        "expirations": "streamjoin_expirations_total",
        "records shed": "streamjoin_shed_records_total",
        "importance kept": "streamjoin_importance_kept_total",
    },
    "control-table": {
        "queries": "streamjoin_query_revision",
        "window tables": "streamjoin_window_bytes",
        "join operators": "streamjoin_probes_total",
        "input topics": "streamjoin_input_records_total",
        "output topics": "streamjoin_output_records_total",
    },
}


def test_the_three_dashboards_exist(dashboards: dict[str, dict[str, Any]]) -> None:
    assert set(dashboards) == set(REQUIRED)
    uids = [d["uid"] for d in dashboards.values()]
    assert len(set(uids)) == len(uids)


@pytest.mark.parametrize("query", QUERIES, ids=[q.id for q in QUERIES])
def test_every_metric_of_every_panel_is_exported(query: Any, exported_metrics: dict[str, str]) -> None:
    names = metric_names(query.expr)
    assert names, f"no metric found in {query.expr!r}"
    unknown = sorted(names - set(exported_metrics))
    assert not unknown, f"{query.id} uses metrics the product does not export: {unknown}"


def test_a_dashboard_naming_an_unknown_metric_fails(exported_metrics: dict[str, str]) -> None:
    """The check above is real: a misspelt metric is reported."""
    assert metric_names('sum(rate(streamjoin_result_total{query="a"}[1m]))') - set(exported_metrics) == {
        "streamjoin_result_total"
    }


@pytest.mark.parametrize(("dashboard", "purpose"), [(d, p) for d, req in REQUIRED.items() for p in req])
def test_the_issue_panels_are_there(
    dashboards: dict[str, dict[str, Any]], dashboard: str, purpose: str
) -> None:
    metric = REQUIRED[dashboard][purpose]
    used = set().union(*(metric_names(q.expr) for q in panel_queries({dashboard: dashboards[dashboard]})))
    assert metric in used, f"{dashboard} shows no {purpose} ({metric})"


def test_every_query_parses_as_promql(tmp_path: Path) -> None:
    """`promtool check rules` parses each query (variables substituted) with Prometheus' own parser."""
    rules = [
        {"record": f"panel:check:{i}", "expr": substitute(q.expr, VARIABLES)} for i, q in enumerate(QUERIES)
    ]
    path = tmp_path / "panels.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    result = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_panels_use_the_datasource_variable(dashboards: dict[str, dict[str, Any]]) -> None:
    """So the dashboards work with any Prometheus datasource, not only the provisioned one."""
    for name, dashboard in dashboards.items():
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource", name
        assert variables["datasource"]["query"] == "prometheus", name
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                assert target["datasource"]["uid"] == "${datasource}", (name, panel["title"])


def test_provisioning_points_at_the_dashboards() -> None:
    root = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "provisioning"
    datasources = yaml.safe_load((root / "datasources" / "prometheus.yml").read_text())
    assert datasources["datasources"][0]["type"] == "prometheus"
    providers = yaml.safe_load((root / "dashboards" / "streamjoin.yml").read_text())
    assert providers["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards/streamjoin"
