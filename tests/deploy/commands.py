"""The `streamjoin` commands the deployments run, read from docker-compose.yml and the rendered chart.

The live dashboard test starts the services with exactly these argument vectors, and a test checks
each one against the real command line (`streamjoin <argv> --help` parses every option and exits 0).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .dashboards import REPO_ROOT

__all__ = ["COMPOSE_FILE", "PRODUCT_IMAGE", "check_cli", "compose_argv", "compose_file", "streamjoin_cli"]

COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
PRODUCT_IMAGE = "streamjoin/streamjoin"


def compose_file(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    """Return the parsed compose file."""
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def compose_argv(service: str, compose: Mapping[str, Any] | None = None) -> list[str]:
    """Return the command of a compose service, e.g. `["streamjoin", "api"]`."""
    services = (compose or compose_file())["services"]
    command = services[service]["command"]
    if not isinstance(command, list) or not all(isinstance(arg, str) for arg in command):
        raise TypeError(f"the command of {service} must be a list of strings (exec form), not {command!r}")
    return list(command)


def streamjoin_cli() -> list[str]:
    """Return how to run the `streamjoin` command of this interpreter's installation."""
    return [sys.executable, "-c", "from streamjoin.cli.main import main; main()"]


def check_cli(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run `streamjoin <argv[1:]> --help`: the CLI parses every option given, then prints the help."""
    if not argv or argv[0] != "streamjoin":
        raise ValueError(f"not a streamjoin command: {list(argv)!r}")
    return _check_cli(tuple(argv))


@functools.cache
def _check_cli(argv: tuple[str, ...], timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*streamjoin_cli(), *argv[1:], "--help"],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        check=False,
    )
