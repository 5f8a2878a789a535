"""deploy/prometheus/prometheus.yml: `promtool check config` passes, and it scrapes every service."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml

from .alert_rules import RULES_FILE, alert_names
from .commands import compose_argv
from .conftest import PROMETHEUS_CONFIG

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def test_promtool_checks_the_config() -> None:
    result = subprocess.run(
        [PROMTOOL, "check", "config", str(PROMETHEUS_CONFIG)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_promtool_checks_the_alert_rules_the_config_loads(tmp_path: Any) -> None:
    """The config's rule_files reach the alert rules, and a broken rule fails the config check."""
    result = subprocess.run(
        [PROMTOOL, "check", "config", str(PROMETHEUS_CONFIG)], capture_output=True, text=True, timeout=60
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert RULES_FILE.name in out and f"SUCCESS: {len(alert_names())} rules found" in out
    (tmp_path / "rules").mkdir()
    (tmp_path / "prometheus.yml").write_text(PROMETHEUS_CONFIG.read_text())
    broken = RULES_FILE.read_text().replace("streamjoin_workers) == 0", "streamjoin_workers) == ", 1)
    assert broken != RULES_FILE.read_text()
    (tmp_path / "rules" / RULES_FILE.name).write_text(broken)
    result = subprocess.run(
        [PROMTOOL, "check", "config", str(tmp_path / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0


def test_promtool_rejects_a_broken_config(tmp_path: Any) -> None:
    """The check is real: a scrape job without a name fails it."""
    broken = tmp_path / "prometheus.yml"
    broken.write_text("scrape_configs:\n  - static_configs: [{targets: ['api:8080']}]\n")
    result = subprocess.run(
        [PROMTOOL, "check", "config", str(broken)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != 0


def _targets() -> dict[str, list[str]]:
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    return {
        job["job_name"]: [t for sc in job.get("static_configs", []) for t in sc["targets"]]
        for job in config["scrape_configs"]
    }


@pytest.mark.parametrize(
    ("job", "service", "port"),
    [("streamjoin-api", "api", None), ("streamjoin-archiver", "archiver", None)],
)
def test_every_streamjoin_service_is_scraped(
    compose: dict[str, Any], job: str, service: str, port: str | None
) -> None:
    """The control plane (every joiner's statistics) and the archiver, at their compose address."""
    if service == "api":  # the control plane's metrics port (STREAMJOIN_METRICS_PORT: no token there)
        port = str(compose["services"]["api"]["environment"]["STREAMJOIN_METRICS_PORT"])
    else:  # the archiver's metrics port is a flag of its command
        argv = compose_argv(service, compose)
        port = argv[argv.index("--metrics-port") + 1]
    assert _targets()[job] == [f"{service}:{port}"]
    assert service in compose["services"]
