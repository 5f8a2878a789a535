"""`streamjoin replay` with SQL: a `.sql` file or a query JSON with `sql` text, and `--streams FILE`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from streamjoin.query import parse_query
from streamjoin.query.text import expand_text, streams_from_json
from streamjoin.testing import expected_results, replay_events

STREAMS = {
    "orders": {"topic": "shop.orders", "timestamp": "ts"},
    "pay": {"topic": "shop.pay", "timestamp": "ts"},
}
SQL = (
    "SELECT * FROM orders [RANGE 10] AS o JOIN pay [ROWS 2] AS p ON o.id = p.id\n"
    "WHERE o.amount * 1.2 > p.total OR lower(o.user.tier) = 'gold'"
)
LINES = [
    ("orders", {"ts": 1, "id": 1, "amount": 10, "user": {"tier": "Gold"}}),
    ("orders", {"ts": 2, "id": 1, "amount": 10, "user": {"tier": "basic"}}),
    ("pay", {"ts": 3, "id": 1, "total": 11}),  # 12 > 11: both orders
    ("pay", {"ts": 4, "id": 1, "total": 50}),  # only the gold order
    ("pay", {"ts": 5, "id": 2, "total": 1}),
]


def _replay(tmp_path: Path, query_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    events = tmp_path / "events.jsonl"
    events.write_text(
        "".join(json.dumps({"stream": s, "record": r}) + "\n" for s, r in LINES), encoding="utf-8"
    )
    streams = tmp_path / "streams.json"
    streams.write_text(json.dumps(STREAMS), encoding="utf-8")
    command = [sys.executable, "-c", "from streamjoin.cli.main import main; main()", "replay"]
    return subprocess.run(
        [*command, str(query_file), str(events), *extra, "--streams", str(streams)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_replay_a_sql_file_equals_the_oracle(tmp_path: Path) -> None:
    query_file = tmp_path / "pays.sql"
    query_file.write_text(SQL, encoding="utf-8")
    done = _replay(tmp_path, query_file)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert {o["query"] for o in out} == {"pays"}
    raw = expand_text(
        {"name": "pays", "output": {"topic": "pays.out"}, "sql": SQL}, streams_from_json(STREAMS)
    )
    query = parse_query(raw)
    want = expected_results(query, replay_events(query, LINES))
    assert sum(want.values()) == 3
    got = Counter((o["tuples"]["orders"]["ts"], o["tuples"]["pay"]["ts"]) for o in out)
    assert got == Counter({(1, 3): 1, (2, 3): 1, (1, 4): 1})


def test_replay_a_query_json_with_sql_text_and_options(tmp_path: Path) -> None:
    query_file = tmp_path / "q.json"
    query = {
        "name": "q",
        "output": {"topic": "o"},
        "sql": SQL,
        "algorithm": "nlj",
        "evaluation": {"mode": "lazy", "every": 2},
    }
    query_file.write_text(json.dumps(query), encoding="utf-8")
    done = _replay(tmp_path, query_file)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3


def test_bad_sql_exits_2_with_its_position(tmp_path: Path) -> None:
    query_file = tmp_path / "bad.sql"
    query_file.write_text("SELECT * FROM orders o JOIN pay p ON o.id = x.id", encoding="utf-8")
    done = _replay(tmp_path, query_file)
    assert done.returncode == 2 and done.stdout == ""
    assert "sql: unknown stream or alias 'x' at position 44" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
