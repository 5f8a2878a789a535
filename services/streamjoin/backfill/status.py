"""The status of a back-fill job as a small JSON file, rewritten atomically as the job goes.

The `streamjoin backfill` command writes it (`--status-file`); `jobs.py` reads it for the control
plane. States: `starting` → `running` → `succeeded` | `failed` | `cancelled`.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "status.json"
>>> StatusFile(path).update(state="running", progress=0.5)
>>> StatusFile(path).read()["progress"]
0.5
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Literal, TypeAlias

__all__ = ["TERMINAL_STATES", "JobState", "StatusFile"]

JobState: TypeAlias = Literal["starting", "running", "succeeded", "failed", "cancelled"]
TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})


class StatusFile:
    """Read and merge-update one job's status file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        """Return the status (empty when the file does not exist yet or is being replaced)."""
        try:
            value = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        return value if isinstance(value, dict) else {}

    def update(self, **fields: Any) -> None:
        """Merge `fields` into the status and replace the file atomically."""
        status = self.read()
        status.update(fields)
        status["updated_at"] = time.time()
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(status, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)
