"""`streamjoin shed-eval`: the worked example through its JSON, the table, and exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streamjoin.query.grammar import POLICY_NAMES

from .worked import events, query


def _command() -> list[str]:
    script = Path(sys.executable).with_name("streamjoin")
    if script.exists():
        return [str(script)]
    found = shutil.which("streamjoin")
    return [found] if found else [sys.executable, "-c", "from streamjoin.cli.main import main; main()"]


def _run(tmp_path: Path, q: Any, lines: list[Any], *args: str) -> subprocess.CompletedProcess[str]:
    query_file = tmp_path / "query.json"
    events_file = tmp_path / "events.jsonl"
    query_file.write_text(q if isinstance(q, str) else json.dumps(q), encoding="utf-8")
    events_file.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return subprocess.run(
        [*_command(), "shed-eval", str(query_file), str(events_file), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _policy(report: dict[str, Any], name: str) -> dict[str, Any]:
    (row,) = [p for p in report["policies"] if p["policy"] == name]
    return row


def test_worked_example_json_at_every_memory_of_the_paper(tmp_path: Path) -> None:
    for memory, best in ((2, 26), (4, 30), (6, 32), (8, 32)):
        done = _run(tmp_path, query(), events(), "--json", "--memory", str(memory))
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert set(report) == {"exact", "optimum", "policies"}
        assert report["exact"] == {"results": 9, "importance": 32}
        assert report["optimum"]["importance"] == best
        assert report["optimum"]["method"] == "odja"
        assert set(report["optimum"]) == {"results", "importance", "method"}
        assert [p["policy"] for p in report["policies"]] == list(POLICY_NAMES)  # every one, as declared
        for row in report["policies"]:
            assert set(row) == {"policy", "results", "importance"}
            assert row["importance"] <= best
        if memory == 4:
            assert report["optimum"]["results"] == 7
            assert _policy(report, "simp")["importance"] == 27
        if memory == 8:  # every window fits: every policy gives the exact result
            assert all(p == {**p, "results": 9, "importance": 32} for p in report["policies"])


def test_query_budget_is_the_default_and_flow_agrees(tmp_path: Path) -> None:
    done = _run(tmp_path, query(memory=4), events(), "--json", "--method", "flow")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["optimum"] == {"results": 7, "importance": 30, "method": "flow"}


def test_table_shows_each_policy_share_of_the_optimum(tmp_path: Path) -> None:
    done = _run(tmp_path, query(), events())
    assert done.returncode == 0, done.stderr
    assert "share of optimum" in done.stdout
    simp = next(line for line in done.stdout.splitlines() if " simp " in line)
    assert "27" in simp and "90.0%" in simp


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"shedding": None}, "no memory budget"),
        ({"shedding": {"memory": 4, "policy": "nope"}}, "shedding.policy"),
        (
            {
                "inputs": [
                    {"stream": "r", "timestamp": "t", "window": {"range": 3}},
                    {"stream": "s", "timestamp": "t"},  # bounded by `within` alone: no window to share
                ],
                "within": [["r", "s", 3]],
            },
            "needs a window (range or rows) on every input",
        ),
    ],
)
def test_bad_query_exits_2_with_one_line(tmp_path: Path, change: dict[str, Any], words: str) -> None:
    done = _run(tmp_path, {**query(), **change}, events(), "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("extra", "args", "words"),
    [
        ('{"stream": "r", "record": {"t": 9, "k": 1, "imp": 0}}', (), "line 13"),
        ('{"stream": "r", "record": {"t": 9, "k": 1}}', (), "line 13"),
        ("not json", (), "line 13"),
        ('{"stream": "x", "record": {"t": 9}}', (), "line 13"),
        (None, ("--memory", "1"), "at least 2"),
        (None, ("--method", "magic"), "--method"),
    ],
)
def test_bad_events_or_options_exit_2(
    tmp_path: Path, extra: str | None, args: tuple[str, ...], words: str
) -> None:
    lines: list[Any] = events() + ([extra] if extra else [])
    done = _run(tmp_path, query(), lines, "--json", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_more_than_two_inputs_report_an_upper_bound_and_a_feasible_schedule(tmp_path: Path) -> None:
    q = {
        "name": "three",
        "output": {"topic": "o"},
        "inputs": [{"stream": s, "timestamp": "t", "window": {"range": 2}} for s in "abc"],
        "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
        "shedding": {"memory": 3, "policy": "simpprob", "importance": "imp"},
    }
    lines = [
        {"stream": s, "record": {"t": t, "k": (t * 7 + i) % 2, "imp": 1 + (t + i) % 3}}
        for t in range(6)
        for i, s in enumerate("abc")
    ]
    done = _run(tmp_path, q, lines, "--json")
    assert done.returncode == 0, done.stderr
    optimum = json.loads(done.stdout)["optimum"]
    assert optimum["method"] == "flow-upper-bound"
    assert optimum["feasible"]["importance"] <= optimum["importance"]


def test_without_importance_the_optimum_is_the_max_count_one(tmp_path: Path) -> None:
    # Every record has importance 1: the optimum is Das et al.'s max-subset, 8 results at memory 4.
    unweighted = query()
    unweighted["shedding"] = {"memory": 4, "policy": "simp"}
    done = _run(tmp_path, unweighted, events(), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["exact"] == {"results": 9, "importance": 9}
    assert report["optimum"] == {"results": 8, "importance": 8, "method": "odja"}
    assert all(p["results"] == p["importance"] <= 8 for p in report["policies"])
