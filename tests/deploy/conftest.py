"""Fixtures of the deployment tests: the compose file, the chart, the Prometheus config, the catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .dashboards import REPO_ROOT, exported_metric_names, load_dashboards

COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
CHART_DIR = REPO_ROOT / "helm" / "streamjoin"
PROMETHEUS_CONFIG = REPO_ROOT / "deploy" / "prometheus" / "prometheus.yml"


@pytest.fixture(scope="session")
def compose() -> dict[str, Any]:
    """The parsed docker-compose.yml."""
    data: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
    return data


@pytest.fixture(scope="session")
def dashboards() -> dict[str, dict[str, Any]]:
    """Every dashboard of deploy/grafana/dashboards by file stem."""
    return load_dashboards()


@pytest.fixture(scope="session")
def exported_metrics() -> dict[str, str]:
    """Every sample name the product exports, to the service that exports it."""
    return exported_metric_names()


@pytest.fixture(scope="session")
def chart_dir() -> Path:
    """The Helm chart's directory."""
    return CHART_DIR
