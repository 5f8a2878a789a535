"""`streamjoin plan STREAMS.json [--all]` prints the JSON of cost-model.md; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamjoin.cli.main import app

from .golab import TABLES

runner = CliRunner()


def _write(tmp_path: Path, table: int, **extra: object) -> Path:
    streams = [
        {"name": f"S{i}", "rate": r, "window": t, "distinct": v, **extra}
        for i, (r, t, v) in enumerate(TABLES[table], 1)
    ]
    path = tmp_path / "streams.json"
    path.write_text(json.dumps({"streams": streams}))
    return path


def test_plan_table5(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(_write(tmp_path, 5))])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out == {
        "chosen": ["S1", "S2", "S3", "S4"],
        "chosen_cost": 16000.0,
        "optimal": ["S1", "S2", "S3", "S4"],
        "optimal_cost": 16000.0,
    }
    assert isinstance(out["chosen_cost"], float)
    assert result.stdout.count("\n") == 1  # exactly one JSON object


def test_plan_all_lists_every_order_cheapest_first(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(_write(tmp_path, 5)), "--all"])
    assert result.exit_code == 0
    plans = json.loads(result.stdout)["plans"]
    assert len(plans) == 24
    assert plans[0] == {"order": ["S1", "S2", "S3", "S4"], "cost": 16000.0}
    assert plans[4] == {"order": ["S2", "S1", "S3", "S4"], "cost": 19600.0}
    assert plans[-1]["cost"] == 86850.0
    assert [p["cost"] for p in plans] == sorted(p["cost"] for p in plans)


@pytest.mark.parametrize(("table", "cost"), [(6, 80400.0), (7, 47976.9)])
def test_plan_tables_6_7(tmp_path: Path, table: int, cost: float) -> None:
    out = json.loads(runner.invoke(app, ["plan", str(_write(tmp_path, table))]).stdout)
    assert round(out["chosen_cost"], 1) == round(out["optimal_cost"], 1) == cost


def test_plan_buckets(tmp_path: Path) -> None:
    out = json.loads(runner.invoke(app, ["plan", str(_write(tmp_path, 5, buckets=5))]).stdout)
    assert out["chosen_cost"] == 3200.0


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        "[]",
        '{"streams": [{"name": "a", "rate": 1, "window": 1, "distinct": 1}]}',
        '{"streams": [{"name": "a", "rate": 1, "window": 1}, '
        '{"name": "b", "rate": 1, "window": 1, "distinct": 1}]}',
        '{"streams": [{"name": "a", "rate": -1, "window": 1, "distinct": 1}, '
        '{"name": "b", "rate": 1, "window": 1, "distinct": 1}]}',
        '{"streams": [{"name": "a", "rate": 1, "window": 1, "distinct": 1, "colour": 1}, '
        '{"name": "b", "rate": 1, "window": 1, "distinct": 1}]}',
        '{"streams": [{"name": "a", "rate": 1, "window": 1, "distinct": 1}, '
        '{"name": "a", "rate": 1, "window": 1, "distinct": 1}]}',
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "streamjoin plan" in result.stderr


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(tmp_path / "nope.json")])
    assert result.exit_code == 2 and "cannot read" in result.stderr
