"""Run `promtool test rules` on the unit tests of tests/deploy/alerts against a directory of rule files.

Each unit test file names its rule file by base name (`rule_files: [streamjoin-alerts.yml]`), so the
same tests run against the file compose's Prometheus loads (deploy/prometheus/rules) and against the
rules the Helm chart renders (written into a temporary directory).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .dashboards import REPO_ROOT

__all__ = [
    "ALERT_TESTS_DIR",
    "PROMTOOL",
    "RULES_DIR",
    "RULES_FILE",
    "alert_names",
    "alert_rules",
    "promtool",
    "rule_tests",
    "run_unit_test",
]

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
RULES_DIR = REPO_ROOT / "deploy" / "prometheus" / "rules"
RULES_FILE = RULES_DIR / "streamjoin-alerts.yml"
ALERT_TESTS_DIR = Path(__file__).parent / "alerts"


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run promtool with `args`; return the finished process (output as text)."""
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def alert_rules(groups_doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield every alerting rule of a rule file's document (`groups: [{rules: [...]}]`)."""
    for group in groups_doc["groups"]:
        yield from (r for r in group["rules"] if "alert" in r)


def alert_names(path: Path = RULES_FILE) -> list[str]:
    """Return the alert names of a rule file, in order."""
    return [r["alert"] for r in alert_rules(yaml.safe_load(path.read_text()))]


def rule_tests(path: Path) -> list[tuple[str, bool]]:
    """Return (alert name, expects it firing) for every `alert_rule_test` of a unit test file."""
    doc = yaml.safe_load(path.read_text())
    return [(t["alertname"], bool(t["exp_alerts"])) for case in doc["tests"] for t in case["alert_rule_test"]]


def run_unit_test(test_file: Path, rules_dir: Path, work: Path) -> subprocess.CompletedProcess[str]:
    """Copy `test_file` and the rule files of `rules_dir` into `work`; run `promtool test rules`."""
    work.mkdir(parents=True, exist_ok=True)
    for rules in rules_dir.glob("*.yml"):
        shutil.copy(rules, work / rules.name)
    shutil.copy(test_file, work / test_file.name)
    return promtool("test", "rules", test_file.name, cwd=work)
