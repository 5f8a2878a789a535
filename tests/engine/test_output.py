"""The output record (semantics.md section 5): value, key, id, and the spliced form the services use."""

from __future__ import annotations

import json
from typing import Any

from streamjoin.engine import MultiJoin, ResultFormatter
from streamjoin.query import parse_query

QUERY = parse_query(
    {
        "name": "q",
        "inputs": [
            {"stream": "a", "topic": "t.a", "timestamp": "ts", "window": {"range": 10}},
            {"stream": "b", "topic": "t.b", "timestamp": "ts", "window": {"rows": 2}},
        ],
        "where": [["a.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
)


def _results() -> tuple[list[Any], dict[tuple[int, int], bytes]]:
    engine = MultiJoin(QUERY)
    raw: dict[tuple[int, int], bytes] = {}
    for offset, (stream, ts) in enumerate([("a", 1), ("b", 2), ("a", 2.5), ("b", 3)]):
        record = {"ts": ts, "k": 7, "note": f"{stream}{offset}"}
        raw[(QUERY.input_index(stream), offset)] = json.dumps(record, separators=(",", ":")).encode()
        engine.add(stream, record, ts=ts, offset=offset)
    return engine.finish(), raw


def test_value_key_and_id() -> None:
    results, _ = _results()
    formatter = ResultFormatter(QUERY)
    assert len(results) == 4
    ids = set()
    for result in results:
        value = formatter.value(result)
        assert value["query"] == "q"
        assert value["ts"] == max(e.ts for e in result)
        assert set(value["tuples"]) == {"a", "b"}
        assert formatter.key(result) == b"7"
        ids.add(value["id"])
    assert len(ids) == 4  # one id per distinct combination of (topic, partition, offset)


def test_splicing_raw_bytes_equals_encoding() -> None:
    results, raw = _results()
    formatter = ResultFormatter(QUERY)
    for result in results:
        rid, body = formatter.splice(result, lambda e: formatter.piece(e, raw[(e.input, e.offset)]))
        assert body == formatter.encode(result)
        assert rid == formatter.result_id(result)
