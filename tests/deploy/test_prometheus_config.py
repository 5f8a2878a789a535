"""deploy/prometheus/prometheus.yml: `promtool check config` passes, and it scrapes every service."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml

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
    if service == "api":  # the port the control plane listens on (STREAMJOIN_API_PORT)
        port = str(compose["services"]["api"]["environment"]["STREAMJOIN_API_PORT"])
    else:  # the archiver's metrics port is a flag of its command
        argv = compose_argv(service, compose)
        port = argv[argv.index("--metrics-port") + 1]
    assert _targets()[job] == [f"{service}:{port}"]
    assert service in compose["services"]
