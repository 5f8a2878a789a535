"""The schema registry's own virtual environment: the vendored Karapace's pinned dependencies.

Karapace (third_party/karapace, vendored from its source: it is not on PyPI) pins packages that
conflict with streamjoin's (protobuf 3.20, aiokafka 0.12, ...), so it runs from a venv of its own,
third_party/karapace/.venv, built on demand from third_party/karapace/requirements.txt with pip
(PyPI only). The venv is kept while a stamp in it matches the hash of that file and the interpreter's
version; otherwise it is rebuilt (a minute or two). Concurrent builders (pytest-xdist workers) wait
on a file lock, so it is built once. Karapace's own source is not installed: the registry runs with
`PYTHONPATH` set to third_party/karapace/src, so an edit there needs no rebuild.

`python -m streamjoin.dev.karapace_venv` builds it (`scripts/test` does, before the tests) and
prints the venv's Python.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KARAPACE_ROOT", "KarapaceRuntime", "KarapaceUnavailableError", "ensure_karapace_venv"]

# services/streamjoin/dev/karapace_venv.py -> the repository root (an editable install or a checkout).
KARAPACE_ROOT = Path(__file__).resolve().parents[3] / "third_party" / "karapace"
_STAMP = ".streamjoin-requirements"
_CHECK = "import aiokafka, avro, fastapi, dependency_injector"


class KarapaceUnavailableError(RuntimeError):
    """The registry's venv cannot be built here; the message says why."""


@dataclass(frozen=True, slots=True)
class KarapaceRuntime:
    """How to run Karapace: this Python, with `source` on its `PYTHONPATH` (None: its own install)."""

    python: Path
    source: Path | None


def _wanted(requirements: Path) -> str:
    digest = hashlib.sha256(requirements.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def _current(venv: Path, wanted: str) -> bool:
    stamp = venv / _STAMP
    return (venv / "bin" / "python").exists() and stamp.exists() and stamp.read_text().strip() == wanted


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        output = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise KarapaceUnavailableError(f"{what} failed (exit {done.returncode}):\n{output}")


def _build(venv: Path, requirements: Path, wanted: str) -> None:
    print(f"installing the schema registry's dependencies into {venv} (a minute or two) ...", file=sys.stderr)
    (venv / _STAMP).unlink(missing_ok=True)
    _run([sys.executable, "-m", "venv", "--clear", str(venv)], f"creating {venv}")
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    _run([*pip, "--requirement", str(requirements)], f"pip install -r {requirements}")
    _run([python, "-c", _CHECK], "importing Karapace's dependencies")
    (venv / _STAMP).write_text(wanted + "\n")


def ensure_karapace_venv(root: Path = KARAPACE_ROOT) -> KarapaceRuntime:
    """Return how to run the vendored Karapace, building its venv first if missing or outdated.

    Raises KarapaceUnavailableError when the vendored source is absent (an install without the
    repository) or the venv cannot be built (no network to PyPI, no `venv` module, ...).
    """
    source, requirements, venv = root / "src", root / "requirements.txt", root / ".venv"
    if not (source / "karapace" / "__main__.py").exists() or not requirements.exists():
        raise KarapaceUnavailableError(f"no vendored Karapace at {root} (it ships with the repository)")
    wanted = _wanted(requirements)
    if not _current(venv, wanted):
        with open(root / ".venv.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait, then look again
            if not _current(venv, wanted):
                _build(venv, requirements, wanted)
    return KarapaceRuntime(python=venv / "bin" / "python", source=source)


if __name__ == "__main__":
    try:
        runtime = ensure_karapace_venv()
    except KarapaceUnavailableError as error:
        print(f"schema registry unavailable: {error}", file=sys.stderr)
        sys.exit(1)
    print(os.fspath(runtime.python))
