"""`streamjoin plan STREAMS.json --query QUERY.json` adds the query's tightened pair bounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from streamjoin.cli.main import app

runner = CliRunner()

_STREAMS = {"streams": [{"name": s, "rate": 1, "window": 10, "distinct": 5} for s in "ABCD"]}


def _fig11(**extra: Any) -> dict[str, Any]:
    return {
        "name": "fig11",
        "inputs": [{"stream": s} for s in "ABCD"],
        "where": [["A.k", "=", "B.k"], ["B.k", "=", "C.k"], ["C.k", "=", "D.k"]],
        "within": [["A", "B", 3], ["B", "C", 4], ["C", "D", 5], ["B", "D", 2]],
        "output": {"topic": "o"},
        **extra,
    }


def _run(tmp_path: Path, query: Any) -> Any:
    (tmp_path / "s.json").write_text(json.dumps(_STREAMS))
    (tmp_path / "q.json").write_text(query if isinstance(query, str) else json.dumps(query))
    return runner.invoke(app, ["plan", str(tmp_path / "s.json"), "--query", str(tmp_path / "q.json")])


def test_the_plan_shows_hammads_fig11_bounds(tmp_path: Path) -> None:
    result = _run(tmp_path, _fig11())
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    bounds = {tuple(b["streams"]): b for b in out["bounds"]}
    assert bounds[("A", "D")] == {"streams": ["A", "D"], "bound": 5, "given": None, "path": ["A", "B", "D"]}
    assert bounds[("A", "C")]["bound"] == 7
    assert bounds[("C", "D")] == {"streams": ["C", "D"], "bound": 5, "given": 5, "path": ["C", "D"]}
    assert len(bounds) == 6
    assert out["chosen"]  # the plan itself is still there


def test_without_query_there_are_no_bounds(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps(_STREAMS))
    out = json.loads(runner.invoke(app, ["plan", str(tmp_path / "s.json")]).stdout)
    assert "bounds" not in out


def test_an_unbounded_query_exits_2_naming_the_input(tmp_path: Path) -> None:
    result = _run(tmp_path, _fig11(within=[["A", "B", 3], ["B", "C", 4]]))
    assert result.exit_code == 2
    assert "'D' has no window" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = _run(tmp_path, "{nope")
    assert result.exit_code == 2
    assert "cannot read query" in result.stderr
