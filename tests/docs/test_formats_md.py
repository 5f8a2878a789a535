"""The walk-through "Avro end to end on the dev stack" of docs/formats.md is run as a user would.

`streamjoin dev up --no-demo --schema-registry` is started; the addresses and the token its table
prints replace the page's example values in its `bash` blocks, which then run in order; the last
lines they print must be the page's output block, and stopping the stack must leave nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from tests.dev.devup import MARKER, output_until_running, start_dev_up, stop_dev_up

from streamjoin.dev.procscan import processes_with_env
from streamjoin.dev.pytest_plugin import skip_without_schema_registry

DOC = Path(__file__).resolve().parents[2] / "docs" / "formats.md"
SECTION = "## Avro end to end on the dev stack"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# What the page's table shows, the value it shows, and how to find the live one in dev up's table.
_TABLE = {
    "bootstrap": ("127.0.0.1:34207", r"STREAMJOIN_KAFKA_BOOTSTRAP=(\S+)"),
    "registry": ("http://127.0.0.1:41131/apis/ccompat/v7", r"STREAMJOIN_SCHEMA_REGISTRY_URL=(\S+)"),
    "api": ("http://127.0.0.1:40727/v1", r"Control plane \(REST\)\s*│\s*(\S+)"),
    "token": ("aHRVjjSxuRpBwhGMh_-2hA", r"API token \(writes\)\s*│\s*(\S+)"),
}


def _walkthrough() -> tuple[list[str], list[str]]:
    """Return the section's bash blocks and the lines of its last (output) block."""
    text = DOC.read_text()
    section = text[text.index(SECTION) :]
    blocks = [(lang, body) for lang, body in _FENCE.findall(section)]
    commands = [body for lang, body in blocks if lang == "bash"]
    expected = blocks[-1][1].splitlines()
    assert len(commands) == 2 and blocks[-1][0] == "", blocks
    return commands, expected


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_the_avro_walkthrough_runs_on_dev_up_with_a_schema_registry(tmp_path: Path) -> None:
    skip_without_schema_registry()
    commands, expected = _walkthrough()
    marker = uuid.uuid4().hex
    env = {**os.environ, MARKER: marker, "COLUMNS": "250"}
    dev = start_dev_up("--no-demo", "--schema-registry", env=env, cwd=tmp_path)
    try:
        table = output_until_running(dev)
        assert re.search(
            r"started the broker in \d+ ms and Redis in \d+ ms and the schema registry in", table
        )
        live = {}
        for name, (_, pattern) in _TABLE.items():
            found = re.search(pattern, table)
            assert found is not None, f"{name} not in:\n{table}"
            live[name] = found[1]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/apis/ccompat/v7", live["registry"])
        assert re.search(rf"Schema registry \(Confluent API\)\s*│\s*{re.escape(live['registry'])}", table)
        script = "\n".join(commands)
        for name, (shown, _) in _TABLE.items():
            script = script.replace(shown, live[name])
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        ran = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            env={**env, "PATH": path},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert ran.stdout.splitlines()[-len(expected) :] == expected, ran.stdout
    finally:
        rest = stop_dev_up(dev)
    assert dev.returncode == 0, rest
    assert "none left running" in rest
    assert processes_with_env(MARKER, marker) == []
