"""The Helm chart's alert rules: the ones tests/deploy/alerts tests, following the release's settings.

Rendered offline with Helm's own engine (see `chart.py`); promtool runs the unit tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .alert_rules import ALERT_TESTS_DIR, RULES_FILE, run_unit_test
from .chart import PRODUCTION, Rendered, merge, render


def _write_chart_rules(manifests: Rendered, directory: Path) -> dict[str, Any]:
    """Write the rule files the chart renders into `directory`; return the alerts object."""
    directory.mkdir(parents=True, exist_ok=True)
    (alerts,) = [o for o in manifests.objects if o["metadata"]["name"] == "sj-streamjoin-alerts"]
    if alerts["kind"] == "ConfigMap":
        for name, text in alerts["data"].items():
            (directory / name).write_text(text)
    else:  # a PrometheusRule: its groups, split back into the shared file and the release's group
        groups = alerts["spec"]["groups"]
        shared = [g for g in groups if g["name"] != "streamjoin-workers"]
        workers = [g for g in groups if g["name"] == "streamjoin-workers"]
        (directory / RULES_FILE.name).write_text(yaml.safe_dump({"groups": shared}))
        (directory / "streamjoin-workers.yml").write_text(yaml.safe_dump({"groups": workers}))
    return alerts


@pytest.mark.parametrize("kind", ["ConfigMap", "PrometheusRule"])
def test_chart_ships_the_tested_alert_rules(kind: str, tmp_path: Path) -> None:
    """Every promtool unit test of tests/deploy/alerts passes on the rules the chart renders."""
    values = {"metrics": {"alerts": {"prometheusRule": kind == "PrometheusRule", "expectedWorkers": 3}}}
    alerts = _write_chart_rules(render(values), tmp_path / "rules")
    assert alerts["kind"] == kind
    if kind == "ConfigMap":
        assert alerts["data"][RULES_FILE.name] == RULES_FILE.read_text().rstrip("\n")
    else:
        assert alerts["apiVersion"] == "monitoring.coreos.com/v1"
        assert alerts["spec"]["groups"][:-1] == yaml.safe_load(RULES_FILE.read_text())["groups"]
    tests = sorted(ALERT_TESTS_DIR.glob("*.yml"))
    assert "workers_missing" in {t.stem for t in tests}
    for test_file in tests:
        result = run_unit_test(test_file, tmp_path / "rules", tmp_path / test_file.stem)
        assert result.returncode == 0, f"{test_file.name}: {result.stdout}{result.stderr}"


def test_alert_rules_follow_the_release() -> None:
    def workers_rule(values: dict[str, Any]) -> str:
        objects = render(values).objects
        (alerts,) = [o for o in objects if o["metadata"]["name"] == "sj-streamjoin-alerts"]
        (group,) = [g for g in alerts["spec"]["groups"] if g["name"] == "streamjoin-workers"]
        return str(group["rules"][0]["expr"])

    on = {"metrics": {"alerts": {"prometheusRule": True}}}
    assert workers_rule(on) == "max(streamjoin_workers) < 2"  # joiner.replicas
    autoscaled = {"joiner": {"autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 6}}}
    assert workers_rule(merge(on, autoscaled)) == "max(streamjoin_workers) < 3"
    assert (
        workers_rule(merge(on, {"metrics": {"alerts": {"expectedWorkers": 5}}}))
        == "max(streamjoin_workers) < 5"
    )
    production = render(PRODUCTION).get("PrometheusRule", "sj-streamjoin-alerts")
    assert production["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    no_workers = render({"joiner": {"replicas": 0}}).get("ConfigMap", "sj-streamjoin-alerts")
    assert set(no_workers["data"]) == {RULES_FILE.name}
    off = render({"metrics": {"alerts": {"enabled": False}}}).objects
    assert not [o for o in off if o["metadata"]["name"] == "sj-streamjoin-alerts"]
