"""`streamjoin replay QUERY.json EVENTS.jsonl` (docs/queries.md, "Replay") against the oracle.

Output lines must be exactly the oracle's results in the format of section 5, nothing else on
stdout; a bad query or events line exits 2 with one line on stderr naming the problem (and the line
number). Each record carries its line number `n`, so an output line maps back to its components.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from streamjoin.query import QueryDef, parse_query
from streamjoin.replay import replay
from streamjoin.testing import Event, ResultKey, expected_results, replay_events

from .harness import COMBINATIONS, Combination, diff, failed, focused
from .profiles import engine_settings
from .strategies import Case, cases

_GOLAB: dict[str, Any] = {
    "name": "golab",
    "inputs": [{"stream": s, "timestamp": "ts", "window": {"range": 100}} for s in ("S1", "S2", "S3")],
    "where": [["S1.attr", "=", "S2.attr"], ["S2.attr", "=", "S3.attr"]],
    "output": {"topic": "out"},
}
_GOLAB_LINES = [("S1", 90), ("S1", 100), ("S2", 150), ("S2", 180), ("S3", 195), ("S3", 205)]


def _command() -> list[str]:
    script = Path(sys.executable).with_name("streamjoin")
    if script.exists():
        return [str(script)]
    found = shutil.which("streamjoin")
    if found:
        return [found]
    return [sys.executable, "-c", "from streamjoin.cli.main import main; main()"]


def _run(tmp_path: Path, query: Any, events_text: str) -> subprocess.CompletedProcess[str]:
    qfile = tmp_path / "query.json"
    qfile.write_text(query if isinstance(query, str) else json.dumps(query), encoding="utf-8")
    efile = tmp_path / "events.jsonl"
    efile.write_text(events_text, encoding="utf-8")
    return subprocess.run(
        [*_command(), "replay", str(qfile), str(efile)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _numbered(lines: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Give every record its line number `n` (1-based), so output records identify their events."""
    return [(s, {**r, "n": i}) for i, (s, r) in enumerate(lines, 1)]


def _events_text(lines: Sequence[tuple[str, dict[str, Any]]]) -> str:
    return "".join(json.dumps({"stream": s, "record": r}) + "\n" for s, r in lines)


def _parse_output(
    stdout: str, query: QueryDef, events: Sequence[Event]
) -> tuple[Counter[ResultKey], set[str]]:
    """Return the results on stdout as oracle keys, and their ids; fail on anything but results."""
    by_n = {e.record["n"]: e for e in events}
    names = query.stream_names
    keys: Counter[ResultKey] = Counter()
    ids: set[str] = set()
    for number, line in enumerate(stdout.splitlines(), 1):
        value = json.loads(line)
        assert isinstance(value, dict) and set(value) == {"query", "ts", "tuples", "id"}, (
            f"stdout {number}: {line}"
        )
        assert value["query"] == query.name and set(value["tuples"]) == set(names), line
        members = [by_n[value["tuples"][s]["n"]] for s in names]
        assert [m.stream for m in members] == list(names), line
        assert all(value["tuples"][m.stream] == dict(m.record) for m in members), line
        assert value["ts"] == max(m.ts for m in members), line
        assert isinstance(value["id"], str) and value["id"] not in ids, f"duplicate id: {line}"
        ids.add(value["id"])
        keys[tuple((m.partition, m.offset) for m in members)] += 1
    return keys, ids


def test_golab_tables_through_the_cli(tmp_path: Path) -> None:
    lines = _numbered([(s, {"ts": ts, "attr": 1}) for s, ts in _GOLAB_LINES])
    for order in (["S1", "S2", "S3"], ["S3", "S2", "S1"]):
        raw = {**_GOLAB, "evaluation": {"mode": "lazy", "every": 1000}, "order": order}
        done = _run(tmp_path, raw, _events_text(lines))
        assert done.returncode == 0, done.stderr
        query = parse_query(raw)
        keys, _ = _parse_output(done.stdout, query, replay_events(query, lines))
        assert keys == Counter({((0, 1), (0, 0), (0, 0)): 1, ((0, 1), (0, 1), (0, 0)): 1})


def _replay_case(case: Case) -> tuple[list[tuple[str, dict[str, Any]]], list[Event]]:
    lines = _numbered([(e.stream, dict(e.record)) for e in case.events])
    return lines, replay_events(case.query, lines)


_CLI_COMBINATIONS = [
    COMBINATIONS[0],
    Combination({"mode": "lazy", "every": 7}, {"mode": "lazy", "every": 1}, "nlj"),
    Combination({"mode": "lazy", "every": 1000}, {"mode": "lazy", "every": 7}, "hash", "reversed"),
]


@engine_settings(5)
@given(case=cases(n=(2, 3, 4), max_partitions=1))
def test_cli_output_equals_the_oracle_with_stable_ids(case: Case) -> None:
    """A few configurations through the real command; the same ids for the same results in each."""
    lines, events = _replay_case(case)
    want = expected_results(case.query, events)
    seen_ids: set[str] | None = None
    with tempfile.TemporaryDirectory() as tmp:  # a fixture's directory would be shared by examples
        tmp_path = Path(tmp)
        for combo in _CLI_COMBINATIONS:
            fields = combo.fields()
            if combo.order == "reversed":
                fields["order"] = list(reversed(case.query.stream_names))
            raw = {**case.raw, **fields}
            done = _run(tmp_path, raw, _events_text(lines))
            assert done.returncode == 0, done.stderr
            keys, ids = _parse_output(done.stdout, case.query, events)
            assert keys == want, (
                f"{combo}: {diff(want, keys, case.query.stream_names, events)}\n{case.describe()}"
            )
            assert seen_ids is None or ids == seen_ids, f"{combo}: result ids differ between configurations"
            seen_ids = ids


def _replay_every_mode(case: Case, focus: str) -> None:
    lines, events = _replay_case(case)
    want = expected_results(case.query, events)
    for combo in focused(focus, COMBINATIONS):
        query = parse_query({**case.raw, **combo.fields()})
        out = io.StringIO()
        replay(query, _events_text(lines).splitlines(keepends=True), out)
        keys, _ = _parse_output(out.getvalue(), query, events)
        if keys != want:
            failed(focus, combo)
            raise AssertionError(
                f"{combo}: {diff(want, keys, query.stream_names, events)}\n{case.describe()}"
            )


@engine_settings(30)
@given(case=cases(n=(2, 3, 4), max_partitions=1))
def test_replay_in_process_equals_the_oracle(case: Case) -> None:
    """`streamjoin.replay.replay` (what the command runs) under every mode."""
    _replay_every_mode(case, "replay")


@engine_settings(30)
@given(case=cases(n=(2, 3), max_partitions=1, late=True))
def test_replay_with_late_records_equals_the_oracle(case: Case) -> None:
    """The same with records beyond `lateness`: late records join nothing (docs/queries.md)."""
    _replay_every_mode(case, "replay-late")


def test_late_record_in_a_replay_file_is_not_joined(tmp_path: Path) -> None:
    """a@5 arrives after both streams reached 10 (lateness 0): it is late, so it joins nothing."""
    raw = {
        "name": "late",
        "inputs": [{"stream": s, "timestamp": "ts", "window": {"range": 100}} for s in ("a", "b")],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
    lines = _numbered([("a", {"ts": 10, "k": 1}), ("b", {"ts": 10, "k": 1}), ("a", {"ts": 5, "k": 1})])
    query = parse_query(raw)
    events = replay_events(query, lines)
    want = expected_results(query, events)
    assert want == Counter({((0, 0), (0, 0)): 1})
    done = _run(tmp_path, raw, _events_text(lines))
    assert done.returncode == 0, done.stderr
    keys, _ = _parse_output(done.stdout, query, events)
    assert keys == want, diff(want, keys, query.stream_names, events)


_GOOD = json.dumps({"stream": "S1", "record": {"ts": 1, "attr": 1}})


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"{_GOOD}\nnot json\n", 2),
        (f"{_GOOD}\n{_GOOD}\n" + json.dumps({"stream": "zz", "record": {"ts": 1, "attr": 1}}) + "\n", 3),
        (f"{_GOOD}\n" + json.dumps({"stream": "S2"}) + "\n", 2),  # no record
        (f"{_GOOD}\n[1]\n", 2),
        (f"{_GOOD}\n" + json.dumps({"stream": "S1", "record": {}, "timestamp": "now"}) + "\n", 2),
    ],
)
def test_bad_events_line_exits_2_with_its_number(tmp_path: Path, text: str, line: int) -> None:
    done = _run(tmp_path, _GOLAB, text)
    assert done.returncode == 2
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1 and f"line {line}" in message, message
    query = parse_query(_GOLAB)
    _parse_output(done.stdout, query, [])  # results only (here: none)


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (
            json.dumps({"stream": "S2", "record": {"attr": 1}}) + f"\n{_GOOD}\n",
            1,
            "missing timestamp field 'ts'",
        ),
        (f"{_GOOD}\n" + json.dumps({"stream": "S2", "record": [1, 2]}) + "\n", 2, "not a JSON object"),
    ],
)
def test_malformed_record_is_reported_and_skipped(tmp_path: Path, text: str, line: int, reason: str) -> None:
    """A malformed record is a dead letter, as in the joiner: reported with its reason, then skipped."""
    done = _run(tmp_path, _GOLAB, text)
    assert done.returncode == 0, done.stderr
    report, summary = done.stderr.strip().splitlines()
    assert report.startswith(f"streamjoin replay: line {line}: malformed record of 'S2': {reason}"), report
    assert summary == "streamjoin replay: 1 malformed record(s) skipped"
    _parse_output(done.stdout, parse_query(_GOLAB), [])  # results only (here: none)


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("{not json", "query"),
        ({**_GOLAB, "inputs": _GOLAB["inputs"][:1]}, "inputs"),
        (
            {**_GOLAB, "inputs": [{**_GOLAB["inputs"][0], "window": {"range": 0}}, *_GOLAB["inputs"][1:]]},
            "range",
        ),
        ({**_GOLAB, "where": [["S1.attr", "=", "S2.attr"]]}, "connected"),
        ({**_GOLAB, "algorithm": "sort-merge"}, "algorithm"),
    ],
)
def test_bad_query_exits_2_with_one_line(tmp_path: Path, query: Any, needle: str) -> None:
    done = _run(tmp_path, query, _GOOD + "\n")
    assert done.returncode == 2
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1 and needle in message, message
    assert done.stdout == ""


def test_missing_file_and_empty_input(tmp_path: Path) -> None:
    done = subprocess.run(
        [*_command(), "replay", str(tmp_path / "nope.json"), str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    done = _run(tmp_path, _GOLAB, "")  # nothing to replay: said, and a failure
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.strip().endswith("events.jsonl: it holds no events"), done.stderr
