"""`max_future` refuses a record only relative to what its input has shown (docs/queries.md,
"Records too far ahead"), in replay as in the joiner: never relative to the watermark, which trails
by `lateness`, and never because one early record was old.

Each case is replayed (the engine, with the reader's bound) and must give the oracle's results over
every record: none of them may be refused.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from streamjoin.query import QueryDef, parse_query
from streamjoin.replay import ReplayError, replay
from streamjoin.testing import expected_results, replay_events

DAY_MS = 86_400_000
NOW_MS = 1_790_000_000_000


def _query(**fields: Any) -> QueryDef:
    return parse_query(
        {
            "name": "q",
            "inputs": [
                {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 5_000}},
                {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"range": 5_000}},
            ],
            "where": [["a.k", "=", "b.k"]],
            "output": {"topic": "out"},
            **fields,
        }
    )


def _replayed(query: QueryDef, lines: Sequence[tuple[str, dict[str, Any]]]) -> Counter[str]:
    out = io.StringIO()
    replay(query, [json.dumps({"stream": s, "record": r}) for s, r in lines], out)
    return Counter(json.loads(line)["id"] for line in out.getvalue().splitlines())


def _oracle(query: QueryDef, lines: Sequence[tuple[str, dict[str, Any]]]) -> Counter[str]:
    topics = [i.topic for i in query.inputs]
    return Counter(
        {
            "|".join(f"{topics[i]}:{p}:{o}" for i, (p, o) in enumerate(key)): n
            for key, n in expected_results(query, replay_events(query, lines)).items()
        }
    )


def _burst(start: int, n: int) -> list[tuple[str, dict[str, Any]]]:
    return [("ab"[i % 2], {"ts": start + 10 * i, "k": i % 3}) for i in range(n)]


def test_a_large_lateness_does_not_refuse_the_next_record() -> None:
    query = _query(lateness=10**9)
    lines = [("a", {"ts": 1, "k": 0}), ("b", {"ts": 1, "k": 0}), ("a", {"ts": 2, "k": 0}), *_burst(3, 40)]
    want = _oracle(query, lines)
    assert sum(want.values()) > 100
    assert _replayed(query, lines) == want


@pytest.mark.parametrize("old", [NOW_MS - 8 * DAY_MS, -5], ids=["8 days old", "negative"])
@pytest.mark.parametrize("which", ["a", "both"])
def test_an_old_first_record_does_not_refuse_the_later_ones(old: int, which: str) -> None:
    query = _query()
    first = [("a", {"ts": old, "k": 7})] + ([("b", {"ts": old, "k": 8})] if which == "both" else [])
    lines = [*first, *_burst(NOW_MS, 60)]
    want = _oracle(query, lines)
    assert sum(want.values()) > 100
    assert _replayed(query, lines) == want


def test_a_record_far_ahead_of_its_input_is_still_refused() -> None:
    lines = [*_burst(NOW_MS, 10), ("b", {"ts": NOW_MS + 8 * DAY_MS, "k": 1})]
    reason = r"line 11: .* more than max_future=604800000 ahead of the newest timestamp of input 'b'"
    with pytest.raises(ReplayError, match=reason):
        _replayed(_query(lateness=10**9), lines)
