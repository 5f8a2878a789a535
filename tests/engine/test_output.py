"""The output record (docs/queries.md): value, key, id, and the spliced form the services use."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

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


def test_id_names_each_component() -> None:
    results, _ = _results()
    formatter = ResultFormatter(QUERY)
    for result in results:
        a, b = result
        assert formatter.result_id(result) == f"t.a:0:{a.offset}|t.b:0:{b.offset}"


def _query(n: int) -> Any:
    streams = "abcd"[:n]
    return parse_query(
        {
            "name": 'q"x',  # a name that needs JSON escaping
            "inputs": [
                {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 10}} for s in streams
            ],
            "where": [[f"{x}.k", "=", f"{y}.k"] for x, y in itertools.pairwise(streams)],
            "output": {"topic": "out"},
        }
    )


@pytest.mark.parametrize("n", [2, 3, 4])  # 2 and 3 have unrolled splicers, 4 the general one
def test_splicing_raw_bytes_equals_encoding(n: int) -> None:
    query = _query(n)
    engine = MultiJoin(query)
    raw: dict[tuple[int, int], bytes] = {}
    for offset in range(3 * n):
        stream = query.stream_names[offset % n]
        ts: float = offset if offset % 2 else offset + 0.5  # integer and fractional t_max
        record = {"ts": ts, "k": 7, "note": f"{stream}{offset} é"}
        raw[(query.input_index(stream), offset)] = json.dumps(record).encode()  # not compact: kept as is
        engine.add(stream, record, ts=ts, offset=offset)
    results = engine.finish()
    assert len(results) > n
    formatter = ResultFormatter(query)
    splice = formatter.splicer(
        lambda e: formatter.piece(e.input, e.partition, e.offset, raw[(e.input, e.offset)], e.record)
    )
    for result in results:
        body = splice(result)
        assert json.loads(body) == formatter.value(result)
        assert json.loads(body)["id"] == formatter.result_id(result)
        for e in result:  # each component's bytes exactly as they arrived
            assert raw[(e.input, e.offset)] in body
