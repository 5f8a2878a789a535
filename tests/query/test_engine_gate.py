"""Until the engine executes them, `within`, strict windows and the expiration scopes are refused.

One gate (`require_engine_support`, called by `parse_query`) stops them on every path that would
run a query: the API's compile step (HTTP 422), the registry read that feeds the joiner (the query
is reported as a problem, not run), and the replay CLI (exit status 2, one line on stderr). Runtime
control changes parse expiration with `parse_mode`, which knows eager and lazy only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streamjoin.api.services.compile import compile_query
from streamjoin.query import QueryError, UnsupportedQueryError
from streamjoin.registry.query import QueryControls, QueryRecord
from streamjoin.registry.records import StreamRecord

_STREAMS = {s: StreamRecord(s, f"t.{s}", "ts") for s in ("a", "b", "c")}
_PLAIN: dict[str, Any] = {
    "name": "q",
    "inputs": [{"stream": s, "window": {"range": 10}} for s in ("a", "b")],
    "where": [["a.k", "=", "b.k"]],
    "output": {"topic": "out"},
}
_UNSUPPORTED: list[tuple[dict[str, Any], str]] = [
    ({**_PLAIN, "within": [["a", "b", 5]]}, "within"),
    (
        {**_PLAIN, "inputs": [{"stream": "a", "window": {"range": 10, "strict": True}}, {"stream": "b"}],
         "within": [["a", "b", 5]]},
        "within",
    ),
    (
        {**_PLAIN, "inputs": [{"stream": "a", "window": {"range": 10, "strict": True}}, _PLAIN["inputs"][1]]},
        "inputs[0].window.strict",
    ),
    ({**_PLAIN, "expiration": {"mode": "probe_insert"}}, "expiration.mode"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "field"), _UNSUPPORTED)
def test_the_api_compile_step_refuses(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(UnsupportedQueryError) as err:
        compile_query(spec, None, _STREAMS)
    assert err.value.field == field
    assert compile_query(_PLAIN, None, _STREAMS).query.name == "q"


def test_the_api_compile_step_refuses_cql_within() -> None:
    raw = {"name": "q", "output": {"topic": "out"}}
    with pytest.raises(UnsupportedQueryError, match="not supported yet by the engine"):
        compile_query(raw, "SELECT * FROM a [RANGE 10], b WITHIN (a, b) 5 WHERE a.k = b.k", _STREAMS)
    with pytest.raises(UnsupportedQueryError, match="strict"):
        compile_query(raw, "SELECT * FROM a [RANGE 10 STRICT], b [RANGE 3] WHERE a.k = b.k", _STREAMS)


def test_the_registry_read_reports_a_stored_query_instead_of_running_it() -> None:
    """A definition stored by another writer is read back through `parse_query`: a problem, not a run."""
    stored = json.dumps({"definition": _UNSUPPORTED[0][0], "cql": None, "created_at": 0, "revision": 1})
    with pytest.raises(UnsupportedQueryError, match="not supported yet by the engine"):
        QueryRecord.from_json("wjoin", stored, QueryControls())
    plain = json.dumps({"definition": _PLAIN, "cql": None, "created_at": 0, "revision": 1})
    assert QueryRecord.from_json("plain", plain, QueryControls()).effective().within == ()


@pytest.mark.parametrize("mode", ["probe", "probe_insert", "probe_all"])
def test_a_runtime_control_change_to_an_expiration_scope_is_refused(mode: str) -> None:
    with pytest.raises(QueryError) as err:
        QueryControls().with_changes({"expiration": {"mode": mode}})
    assert err.value.field == "expiration.mode"


def test_replay_exits_2_with_one_line(tmp_path: Path) -> None:
    query = {**_UNSUPPORTED[0][0], "inputs": [{**i, "timestamp": "ts"} for i in _PLAIN["inputs"]]}
    (tmp_path / "q.json").write_text(json.dumps(query), encoding="utf-8")
    (tmp_path / "e.jsonl").write_text('{"stream": "a", "record": {"ts": 1, "k": 1}}\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "from streamjoin.cli.main import main; main()", "replay"]
        + [str(tmp_path / "q.json"), str(tmp_path / "e.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "within" in message and "not supported yet by the engine" in message
