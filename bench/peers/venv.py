"""The peers' own virtual environment: PyFlink and PySpark from PyPI, apart from streamjoin's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["PACKAGES", "ensure_venv"]

PACKAGES = ("apache-flink==2.2.1", "pyspark==4.2.0")
_CHECK = "import pyflink.version, pyspark; print(pyflink.version.__version__, pyspark.__version__)"


def _versions(python: Path) -> str | None:
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", _CHECK], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_venv(path: Path) -> Path:
    """Return the venv's python, creating the venv and installing PACKAGES if missing."""
    python = path / "bin" / "python"
    wanted = " ".join(p.split("==")[1] for p in PACKAGES)
    if _versions(python) == wanted:
        return python
    print(f"installing {', '.join(PACKAGES)} into {path} (a few minutes) ...", file=sys.stderr, flush=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    found = _versions(python)
    if found != wanted:
        raise SystemExit(f"{path}: expected PyFlink and PySpark {wanted}, found {found}")
    return python
