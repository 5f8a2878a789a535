"""The replay CLI reads records with the same rules as the joiner (poison stops nothing silently)."""

from __future__ import annotations

import io
import json

import pytest

from streamjoin.query import parse_query
from streamjoin.replay import ReplayError, replay

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [
            {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 10}},
            {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"range": 10}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)


def _lines(*events: tuple[str, object]) -> list[str]:
    return [json.dumps({"stream": s, "record": r}) for s, r in events]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"stream": "a", "record": {"ts": 1e300, "k": 1}}', "out of range"),
        ('{"stream": "a", "record": {"ts": NaN, "k": 1}}', "NaN is not JSON"),
        ('{"stream": "a", "record": {"ts": 3, "k": 1, "x": Infinity}}', "Infinity is not JSON"),
        ('{"stream": "a", "record": {"ts": 3, "k": false}}', "is a boolean"),
        (
            '{"stream": "a", "record": {"ts": 100000000000, "k": 1}}',
            "ahead of the newest timestamp of input 'a'",
        ),
    ],
)
def test_replay_refuses_poison(line: str, reason: str) -> None:
    lines = [*_lines(("a", {"ts": 1, "k": 1}), ("a", {"ts": 2, "k": 1})), line]
    with pytest.raises(ReplayError, match=f"line 3: .*{reason}"):
        replay(QUERY, lines, io.StringIO())


def test_replay_output_has_no_bare_nan() -> None:
    out = io.StringIO()
    replay(QUERY, _lines(("a", {"ts": 1, "k": 1, "x": 1.5}), ("b", {"ts": 2, "k": 1})), out)
    assert out.getvalue() and "NaN" not in out.getvalue()
    json.loads(out.getvalue().splitlines()[0], parse_constant=lambda c: pytest.fail(f"bare {c}"))
