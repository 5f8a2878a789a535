"""The peer benchmark's workloads and count check (bench/peers), without Flink or Spark.

The workload files must be the same on every run (deterministic seeds), streamjoin's count on
them must be the brute-force oracle's, and the pairwise time bounds the peers' SQL is built from
(bench/peers/joinplan.py) must select exactly the oracle's results, so neither the generator nor
the SQL can drift from the query streamjoin runs.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from bench.peers.__main__ import CountMismatch, check_count
from bench.peers.engine_count import count as engine_count
from bench.peers.flink_job import count_sql
from bench.peers.joinplan import Step, plan
from bench.peers.report import Run, summarise
from bench.peers.spark_job import condition
from bench.peers.workloads import WORKLOADS, Workload, events, query_json, write_workload

from streamjoin.query import parse_query
from streamjoin.replay import replay
from streamjoin.testing import expected_results, replay_events

# Small enough for the oracle, large enough for every workload to have results.
TINY = {"equi3": 1500, "golab5": 1500, "zipf3": 400, "chain4": 2000}


def _narrow(workload: Workload, divisor: int) -> Workload:
    """Return `workload` with windows `divisor` times smaller (so they bind on a tiny input)."""
    streams = tuple(
        dataclasses.replace(s, window_ms=max(s.window_ms // divisor, 1)) for s in workload.streams
    )
    return dataclasses.replace(workload, streams=streams)


def _pairwise_count(steps: list[Step], rows: dict[str, list[dict[str, int]]]) -> int:
    """Count the combinations that satisfy every step's equalities and bounds (the peers' SQL)."""
    combo: dict[str, dict[str, int]] = {}

    def extend(depth: int) -> int:
        if depth == len(steps):
            return 1
        step, total = steps[depth], 0
        for row in rows[step.stream]:
            if all(combo[old][of] == row[nf] for old, of, nf in step.equalities) and all(
                combo[b.old]["ts"] - b.below_ms <= row["ts"] <= combo[b.old]["ts"] + b.above_ms
                for b in step.bounds
            ):
                combo[step.stream] = row
                total += extend(depth + 1)
        return total

    return extend(0)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_files_are_deterministic(name: str, tmp_path: Path) -> None:
    workload = WORKLOADS[name]
    first, second = (
        write_workload(workload, 500, tmp_path / "1"),
        write_workload(workload, 500, tmp_path / "2"),
    )
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert {str(f) for f in files} >= {"query.json", "events.jsonl", "workload.json"}
    for f in files:
        assert (first / f).read_bytes() == (second / f).read_bytes(), f
    lines = (first / "events.jsonl").read_text().splitlines()
    assert len(lines) == 500
    # the per-stream CSV files hold the same records as the replay input, in the same order
    for stream in workload.streams:
        wanted = [json.loads(line)["record"] for line in lines if json.loads(line)["stream"] == stream.name]
        csv = (first / stream.name / "part-0.csv").read_text().splitlines()
        assert csv == [",".join(str(r[c]) for c in ("ts", *stream.fields)) for r in wanted]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_seed_changes_the_events(name: str) -> None:
    workload = WORKLOADS[name]
    other = dataclasses.replace(workload, seed=workload.seed + 1)
    assert list(events(workload, 300)) == list(events(workload, 300))
    assert list(events(workload, 300)) != list(events(other, 300))


@pytest.mark.parametrize("divisor", [1, 4])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_streamjoin_and_peer_bounds_match_the_oracle(name: str, divisor: int, tmp_path: Path) -> None:
    workload = _narrow(WORKLOADS[name], divisor)
    directory = write_workload(workload, TINY[name], tmp_path)
    query = parse_query(query_json(workload))
    lines = (directory / "events.jsonl").read_text().splitlines()
    pairs = [(e["stream"], e["record"]) for e in map(json.loads, lines)]
    oracle = sum(expected_results(query, replay_events(query, pairs)).values())
    assert oracle > 0

    out = io.StringIO()
    replay(query, lines, out)
    assert out.getvalue().count("\n") == oracle
    assert engine_count(directory / "query.json", directory / "events.jsonl") == oracle

    rows: dict[str, list[dict[str, Any]]] = {s.name: [] for s in workload.streams}
    for stream, record in pairs:
        rows[stream].append(record)
    definition = json.loads((directory / "workload.json").read_text())
    assert _pairwise_count(plan(definition), rows) == oracle


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_peer_sql_bounds_one_event_time_pair_per_join(name: str, tmp_path: Path) -> None:
    directory = write_workload(WORKLOADS[name], 100, tmp_path)
    steps = plan(json.loads((directory / "workload.json").read_text()))
    joins = len(steps) - 1
    assert count_sql(steps).count(".rt BETWEEN") == joins
    assert sum(condition(step).count("_rt BETWEEN") for step in steps[1:]) == joins


def test_count_mismatch_fails_with_both_counts() -> None:
    def run(system: str, results: int) -> Run:
        return Run("equi3", 1000, system, 0, results, 1.0, 1.0, 1024)

    check_count(10, run("flink", 10))
    with pytest.raises(CountMismatch, match=r"equi3.*\(reference\) 10, spark 11"):
        check_count(10, run("spark", 11))


def test_summary_ratios_are_to_replays_best_run() -> None:
    runs = [
        Run("w", 100, "replay", 0, 5, 2.0, 1.0, 1024),
        Run("w", 100, "replay", 1, 5, 4.0, 3.0, 1024),
        Run("w", 100, "flink", 0, 5, 8.0, 5.0, 4096),
    ]
    rows = {r["system"]: r for r in summarise(runs)}
    assert rows["replay"]["cpu_s"] == [1.0, 3.0]
    assert rows["flink"]["cpu_vs_replay"] == 5.0
    assert rows["flink"]["wall_vs_replay"] == 4.0
    assert rows["flink"]["records_per_cpu_s"] == 20
