"""`BatchSplicer`: the output records of whole lists of results, byte for byte `encode`'s."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from streamjoin.engine import MultiJoin, ResultFormatter
from streamjoin.query import parse_query

# Timestamps that compare equal but print differently (1 and 1.0, 0.0 and -0.0), fractions, big ints.
TIMESTAMPS: list[float] = [0, 0.0, -0.0, 1, 1.0, 1.5, 2, 2.0, 2.25, 3, 1e-05, 4, 4.0, 2**40]


def _query(n: int, shedding: bool = False) -> Any:
    streams = "abcde"[:n]
    raw: dict[str, Any] = {
        "name": 'q"x',
        "inputs": [
            {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 2**41}} for s in streams
        ],
        "where": [[f"{x}.k", "=", f"{y}.k"] for x, y in itertools.pairwise(streams)],
        "output": {"topic": "out"},
    }
    if shedding:
        raw["shedding"] = {"memory": 1000, "policy": "simp", "importance": "imp", "combine": "product"}
    return parse_query(raw)


def _results(query: Any, seed: int, count: int = 40) -> list[Any]:
    rng = random.Random(seed)
    formatter = ResultFormatter(query)
    engine = MultiJoin(query)
    times = sorted((rng.choice(TIMESTAMPS) for _ in range(count)), key=float)
    for offset, ts in enumerate(times):
        stream = rng.choice(query.stream_names)
        record = {"ts": ts, "k": rng.randint(0, 1), "v": rng.choice([1.5, "é", None, [1]]), "imp": 2}
        raw = json.dumps(record).encode()  # not compact: spliced as it arrived
        piece = formatter.piece(query.input_index(stream), 0, offset, raw, record)
        engine.add(stream, record, ts=ts, offset=offset, extra=piece)
    return engine.finish()


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(6))
def test_batch_splicing_equals_splicing_one_by_one(n: int, seed: int) -> None:
    query = _query(n)
    results = _results(query, seed)
    assert results
    formatter = ResultFormatter(query)
    one = formatter.splicer()
    batch = formatter.batch_splicer()
    expected = [one(r) for r in results]
    assert batch.records(results) == expected
    assert batch.block(results) == b"".join(e + b"\n" for e in expected)
    for record, result in zip(expected, results, strict=True):  # and the value is `value`'s
        assert json.loads(record) == formatter.value(result)
        assert json.loads(record)["ts"] == max(e.ts for e in result)
    assert batch.records([]) == [] and batch.block([]) == b""


def test_a_timestamp_tie_prints_as_the_first_largest_member() -> None:
    query = _query(2)
    formatter = ResultFormatter(query)
    engine = MultiJoin(query)
    for offset, (stream, ts) in enumerate([("a", 1), ("b", 1.0), ("a", -0.0), ("b", 0.0)]):
        record = {"ts": ts, "k": 0}
        piece = formatter.piece(query.input_index(stream), 0, offset, json.dumps(record).encode(), record)
        engine.add(stream, record, ts=ts, offset=offset, extra=piece)
    results = engine.finish()
    batch = formatter.batch_splicer().records(results)
    assert batch == [formatter.splicer()(r) for r in results]
    assert {json.dumps(max(e.ts for e in r)).encode() in b for r, b in zip(results, batch, strict=True)}


def test_batches_of_results_larger_than_one_format_slice() -> None:
    query = _query(3)
    results = _results(query, 1, count=200)
    results = (results * (10_000 // len(results) + 1))[:10_000]  # over one `%` slice of 8192
    formatter = ResultFormatter(query)
    one = formatter.splicer()
    assert formatter.batch_splicer().block(results) == b"".join(one(r) + b"\n" for r in results)


def test_shedding_records_carry_their_importance_in_batches_too() -> None:
    query = _query(2, shedding=True)
    results = _results(query, 2)
    formatter = ResultFormatter(query)
    batch = formatter.batch_splicer()
    one = formatter.splicer()
    assert batch.records(results) == [one(r) for r in results]
    assert [json.loads(one(r)) for r in results] == [formatter.value(r) for r in results]
    assert all(b'"importance":' in line for line in batch.block(results).splitlines())


def _run_results(query: Any, seed: int, count: int = 40) -> tuple[list[Any], Any]:
    """Return the results of `_results`'s input and the engine's runs of them by emitting entry."""
    rng = random.Random(seed)
    formatter = ResultFormatter(query)
    engine = MultiJoin(query)
    times = sorted((rng.choice(TIMESTAMPS) for _ in range(count)), key=float)
    results: list[Any] = []
    runs: list[Any] = []
    for offset, ts in enumerate(times):
        stream = rng.choice(query.stream_names)
        record = {"ts": ts, "k": rng.randint(0, 1), "v": rng.choice([1.5, "%s", None, [1]])}
        raw = json.dumps(record).encode()
        piece = formatter.piece(query.input_index(stream), 0, offset, raw, record)
        engine.add(stream, record, ts=ts, offset=offset, extra=piece)
        if offset % 7 == 6:  # several releases, each with its own runs
            released = engine.advance()
            runs += [(start + len(results), end + len(results), e) for start, end, e in engine.result_runs]
            results += released
    released = engine.finish()
    runs += [(start + len(results), end + len(results), e) for start, end, e in engine.result_runs]
    return results + released, runs


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(6))
def test_runs_of_one_emitter_splice_as_one_by_one(n: int, seed: int) -> None:
    # Ties of 1 and 1.0 before the emitter take the per-result path; the others the run's format.
    query = _query(n)
    results, runs = _run_results(query, seed)
    assert runs
    for start, end, emitter in runs:  # the engine's promise the splice relies on
        assert all(r[emitter.input] is emitter for r in results[start:end])
        assert all(max(e.ts for e in r) == emitter.ts for r in results[start:end])
    formatter = ResultFormatter(query)
    one = formatter.splicer()
    batch = formatter.batch_splicer()
    assert batch.records(results, runs) == [one(r) for r in results]
    # runs covering part of the results: the rest is formatted one by one around them
    assert batch.records(results, runs[1::2]) == [one(r) for r in results]


def test_percent_signs_in_names_and_values_come_out_as_written() -> None:
    raw: dict[str, Any] = {
        "name": "q%s%%",
        "inputs": [
            {"stream": s, "topic": t, "timestamp": "ts", "window": {"range": 100}}
            for s, t in (("a%d", "t.a"), ("b", "t.b"))
        ],
        "where": [["a%d.k", "=", "b.k"]],
        "output": {"topic": "out"},
    }
    query = parse_query(raw)
    formatter = ResultFormatter(query)
    engine = MultiJoin(query)
    for offset, stream in enumerate(["a%d", "b", "b", "a%d"]):
        record = {"ts": offset, "k": 0, "v": "%d%%"}
        raw_bytes = json.dumps(record, separators=(",", ":")).encode()  # as `encode` writes it
        piece = formatter.piece(query.input_index(stream), 0, offset, raw_bytes, record)
        engine.add(stream, record, ts=offset, offset=offset, extra=piece)
    results = engine.finish()
    runs = engine.result_runs
    assert results and runs
    batch = formatter.batch_splicer()
    expected = [formatter.encode(r) for r in results]
    assert [json.loads(b) for b in expected] == [formatter.value(r) for r in results]
    assert batch.records(results) == expected
    assert batch.records(results, runs) == expected
    assert batch.block(results) == b"".join(e + b"\n" for e in expected)
