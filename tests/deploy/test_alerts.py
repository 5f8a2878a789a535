"""The Prometheus alert rules of deploy/prometheus/rules, tested with `promtool test rules`.

Each file of tests/deploy/alerts feeds input series to the rules and states the alerts expected at
given times (labels and annotations), firing and not firing. The tests are shown to be real: with a
rule removed, its unit tests fail. Every metric a rule reads is one the product exports.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from .alert_rules import (
    ALERT_TESTS_DIR,
    RULES_DIR,
    RULES_FILE,
    alert_names,
    alert_rules,
    promtool,
    rule_tests,
    run_unit_test,
)
from .dashboards import metric_names

ALERTS = alert_names()
SHARED_TESTS = sorted(
    p
    for p in ALERT_TESTS_DIR.glob("*.yml")
    if yaml.safe_load(p.read_text())["rule_files"] == [RULES_FILE.name]
)


def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", str(RULES_FILE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in result.stdout
    assert set(ALERTS) >= {
        "StreamjoinQueryStuck",
        "StreamjoinConsumerLagGrowing",
        "StreamjoinDeadLetters",
        "StreamjoinLateRecords",
        "StreamjoinWorkerNotReady",
        "StreamjoinNoWorkers",
    }


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    cases = {case for path in SHARED_TESTS for case in rule_tests(path)}
    for alert in ALERTS:
        assert (alert, True) in cases, f"no unit test expects {alert} to fire"
        assert (alert, False) in cases, f"no unit test expects {alert} to stay silent"


@pytest.mark.parametrize("test_file", SHARED_TESTS, ids=lambda p: p.stem)
def test_alert_unit_tests_pass(test_file: Path, tmp_path: Path) -> None:
    result = run_unit_test(test_file, RULES_DIR, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("alert", ALERTS)
def test_unit_tests_fail_without_their_rule(alert: str, tmp_path: Path) -> None:
    """The unit tests would catch a rule that stopped firing: drop the rule and they fail."""
    doc = yaml.safe_load(RULES_FILE.read_text())
    for group in doc["groups"]:
        group["rules"] = [r for r in group["rules"] if r.get("alert") != alert]
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / RULES_FILE.name).write_text(yaml.safe_dump(doc))
    naming = [p for p in SHARED_TESTS if any(name == alert for name, _ in rule_tests(p))]
    results = [run_unit_test(p, rules, tmp_path / p.stem) for p in naming]
    assert naming and any(r.returncode != 0 for r in results)
    assert any(f"alertname: {alert}" in r.stdout + r.stderr for r in results)


def test_rules_read_only_exported_metrics(exported_metrics: dict[str, str]) -> None:
    for rule in alert_rules(yaml.safe_load(RULES_FILE.read_text())):
        names = metric_names(rule["expr"])
        assert names, rule["alert"]
        assert names <= exported_metrics.keys(), f"{rule['alert']}: {names - exported_metrics.keys()}"


def test_every_alert_says_what_it_means() -> None:
    for rule in alert_rules(yaml.safe_load(RULES_FILE.read_text())):
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    documented = (RULES_DIR.parents[2] / "docs" / "deploy.md").read_text()
    for alert in [*ALERTS, "StreamjoinWorkersMissing"]:
        assert f"`{alert}`" in documented, f"{alert} is not documented in docs/deploy.md"
