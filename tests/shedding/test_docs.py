"""docs/shedding.md's worked example runs as written and prints what the page shows."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from .test_cli import _command

DOC = Path(__file__).resolve().parents[2] / "docs" / "shedding.md"


def test_the_documented_example_prints_the_documented_report(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    example = text[text.index("### Example") :]
    blocks = re.findall(r"```(json|jsonl)\n(.*?)```", example, flags=re.S)
    (_, query), (_, events), (_, printed) = blocks[:3]
    (tmp_path / "worked.json").write_text(query, encoding="utf-8")
    (tmp_path / "worked.jsonl").write_text(events, encoding="utf-8")
    done = subprocess.run(
        [*_command(), "shed-eval", "worked.json", "worked.jsonl", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(printed)
