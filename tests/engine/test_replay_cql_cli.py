"""`streamjoin replay` with CQL: `--streams STREAMS.json` and a CQL file, or `--cql TEXT`."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

from streamjoin.dev.ports import free_port
from streamjoin.query import parse_query
from streamjoin.testing import expected_results, replay_events

from .test_replay_cli import _GOLAB_LINES, _command, _events_text, _numbered, _parse_output

_STREAMS = [{"name": s, "topic": f"t.{s}", "timestamp": "ts"} for s in ("S1", "S2", "S3")]
_CQL = (
    "SELECT * FROM S1 [RANGE 100], S2 [RANGE 100], S3 [RANGE 100] "
    "WHERE S1.attr = S2.attr AND S2.attr = S3.attr"
)


def _replay(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STREAMJOIN_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}  # no registry
    return subprocess.run(
        [*_command(), "replay", *args], capture_output=True, text=True, timeout=120, check=False, env=env
    )


def test_cql_file_and_cql_option_give_the_oracle_results(tmp_path: Path) -> None:
    lines = _numbered([(s, {"ts": ts, "attr": 1}) for s, ts in _GOLAB_LINES])
    (tmp_path / "events.jsonl").write_text(_events_text(lines), encoding="utf-8")
    (tmp_path / "streams.json").write_text(json.dumps(_STREAMS), encoding="utf-8")
    (tmp_path / "q.cql").write_text(_CQL, encoding="utf-8")
    events, streams = str(tmp_path / "events.jsonl"), str(tmp_path / "streams.json")
    for name, args in (
        ("q", ["--streams", streams, str(tmp_path / "q.cql"), events]),
        ("replay", ["--streams", streams, "--cql", _CQL, events]),
    ):
        query = parse_query(
            {
                "name": name,
                "inputs": [
                    {"stream": s["name"], "topic": s["topic"], "timestamp": "ts", "window": {"range": 100}}
                    for s in _STREAMS
                ],
                "where": [["S1.attr", "=", "S2.attr"], ["S2.attr", "=", "S3.attr"]],
                "output": {"topic": f"{name}.out"},
            }
        )
        want = expected_results(query, replay_events(query, lines))
        assert sum(want.values()) == 2
        done = _replay(tmp_path, *args)
        assert done.returncode == 0, done.stderr
        keys, _ = _parse_output(done.stdout, query, replay_events(query, lines))
        assert keys == Counter(want), args


def test_bad_cql_arguments_exit_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "streams.json").write_text(json.dumps(_STREAMS), encoding="utf-8")
    events, streams = str(tmp_path / "events.jsonl"), str(tmp_path / "streams.json")
    cases = {
        "give --streams STREAMS.json": ["--cql", _CQL, events],
        "unknown stream": ["--streams", streams, "--cql", "SELECT * FROM S1 [RANGE 1], X [RANGE 1]", events],
        "expected EVENTS.jsonl": ["--streams", streams, "--cql", _CQL, events, events],
    }
    for message, args in cases.items():
        done = _replay(tmp_path, *args)
        assert done.returncode == 2 and done.stdout == "", (args, done.stdout, done.stderr)
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
