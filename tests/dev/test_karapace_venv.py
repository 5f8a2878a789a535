"""The schema registry's venv: found, reused while its requirements are unchanged, rebuilt otherwise.

The real build (pip from PyPI) is exercised by the `schema_registry` fixture in the live tests;
here the vendored tree is checked and the caching decision is observed through the builder calls.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from streamjoin.dev import karapace_venv
from streamjoin.dev.karapace_venv import KARAPACE_ROOT, KarapaceUnavailableError, ensure_karapace_venv
from streamjoin.dev.schema_registry import KARAPACE_PYTHON_ENV, find_karapace


def _fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "karapace"
    (root / "src" / "karapace").mkdir(parents=True)
    (root / "src" / "karapace" / "__main__.py").write_text("")
    (root / "requirements.txt").write_text("avro==1.12.2\n")
    return root


def _record_builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    builds: list[Path] = []

    def build(venv: Path, requirements: Path, wanted: str) -> None:
        builds.append(venv)
        (venv / "bin").mkdir(parents=True, exist_ok=True)
        (venv / "bin" / "python").write_text("")
        (venv / karapace_venv._STAMP).write_text(wanted + "\n")

    monkeypatch.setattr(karapace_venv, "_build", build)
    return builds


def test_the_vendored_karapace_ships_with_the_repository() -> None:
    assert (KARAPACE_ROOT / "src" / "karapace" / "__main__.py").is_file()
    assert (KARAPACE_ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    requirements = (KARAPACE_ROOT / "requirements.txt").read_text().splitlines()
    pins = [line for line in requirements if line and not line.startswith((" ", "#"))]
    assert pins and all("==" in pin and "@" not in pin for pin in pins)  # PyPI versions only
    assert "avro==1.12.2" in pins and "protobuf==3.20.3" in pins


def test_a_missing_vendored_tree_is_unavailable_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(KarapaceUnavailableError, match="no vendored Karapace"):
        ensure_karapace_venv(tmp_path / "nowhere")


def test_the_venv_is_built_once_and_rebuilt_when_the_requirements_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _fake_root(tmp_path)
    builds = _record_builds(monkeypatch)
    first = ensure_karapace_venv(root)
    assert builds == [root / ".venv"]
    assert first.python == root / ".venv" / "bin" / "python" and first.source == root / "src"
    assert ensure_karapace_venv(root) == first
    assert len(builds) == 1  # unchanged requirements: reused
    (root / "requirements.txt").write_text("avro==1.12.1\n")
    ensure_karapace_venv(root)
    assert len(builds) == 2


def test_the_environment_variable_overrides_the_vendored_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\n")
    monkeypatch.setenv(KARAPACE_PYTHON_ENV, str(python))
    with pytest.raises(KarapaceUnavailableError, match="not an executable"):
        find_karapace()
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    runtime = find_karapace()
    assert runtime.python == python and runtime.source is None
