"""The peer benchmark's Kafka mode (bench/peers/kafka_*.py), without a broker or a JVM: the topics'
keys and Kafka Streams' chain of joins, the chain's own count against a brute force of its
semantics, the result timestamp every system writes, the latency rate, the summary, the
process-tree meter, and the options and late records of the joiner's workers.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from bench.peers.chained_count import chained_count
from bench.peers.engine_count import count as engine_count
from bench.peers.joinplan import chain, load, plan, topic_keys
from bench.peers.kafka_inputs import KafkaInputs
from bench.peers.kafka_latency import result_ts
from bench.peers.kafka_report import rates_for_latency, summarise
from bench.peers.kafka_run import reported_late
from bench.peers.kafka_systems import Joiner, Setting
from bench.peers.kstreams_app import plan_properties
from bench.peers.proctree import TreeMeter
from bench.peers.workloads import WORKLOADS, Workload, write_workload

TINY = {"equi3": 1500, "golab5": 1000, "zipf3": 600, "chain4": 2000}


def _narrow(workload: Workload, divisor: int) -> Workload:
    streams = tuple(
        dataclasses.replace(s, window_ms=max(s.window_ms // divisor, 1)) for s in workload.streams
    )
    return dataclasses.replace(workload, streams=streams)


def _rows(directory: Path) -> dict[str, list[dict[str, int]]]:
    rows: dict[str, list[dict[str, int]]] = {}
    for line in (directory / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        rows.setdefault(event["stream"], []).append(event["record"])
    return rows


def _brute_force(directory: Path, *, chained: bool) -> int:
    """Count the combinations depth first, pruning on the equalities: Kafka Streams' chain (each
    input within its join's bounds around the youngest so far), or every member within its own
    window of the youngest (streamjoin's range windows, checked on complete combinations)."""
    definition = load(directory)
    steps = plan(definition)
    windows = {s["name"]: int(s["window_ms"]) for s in definition["streams"]}
    bounds = [None, *chain(definition, steps)]
    rows = _rows(directory)
    combo: dict[str, dict[str, int]] = {}

    def extend(depth: int, youngest: int) -> int:
        if depth == len(steps):
            return int(chained or all(youngest - r["ts"] <= windows[n] for n, r in combo.items()))
        step, bound, total = steps[depth], bounds[depth], 0
        for row in rows.get(step.stream, []):
            if not all(combo[o][of] == row[nf] for o, of, nf in step.equalities):
                continue
            outside = bound is not None and not (
                youngest - bound.before_ms <= row["ts"] <= youngest + bound.after_ms
            )
            if chained and outside:
                continue
            combo[step.stream] = row
            total += extend(depth + 1, max(youngest, row["ts"]))
        return total

    return extend(0, -(2**62))


def test_topics_are_keyed_by_each_inputs_first_join_field(tmp_path: Path) -> None:
    chain4 = plan(load(write_workload(WORKLOADS["chain4"], 100, tmp_path / "c")))
    assert topic_keys(chain4) == {"a": "x", "b": "x", "c": "y", "d": "z"}
    equi3 = plan(load(write_workload(WORKLOADS["equi3"], 100, tmp_path / "e")))
    assert topic_keys(equi3) == {"a": "k", "b": "k", "c": "k"}


def test_kafka_streams_re_keys_only_where_the_join_field_changes(tmp_path: Path) -> None:
    directory = write_workload(WORKLOADS["chain4"], 100, tmp_path / "c")
    definition = load(directory)
    steps = chain(definition, plan(definition))
    assert [(s.stream, s.rekey) for s in steps] == [("b", False), ("c", True), ("d", True)]
    golab = write_workload(WORKLOADS["golab5"], 100, tmp_path / "g")
    golab_steps = chain(load(golab), plan(load(golab)))
    assert not any(s.rekey for s in golab_steps)
    # each join: the new record within its own window before the result, the widest earlier one after
    assert [(s.before_ms, s.after_ms) for s in golab_steps] == [(1500, 1500), (3000, 1500), (1500, 3000)]


@pytest.mark.parametrize("divisor", [1, 8])
@pytest.mark.parametrize("name", sorted(TINY))
def test_chained_count_is_the_brute_force_of_its_semantics(name: str, divisor: int, tmp_path: Path) -> None:
    directory = write_workload(_narrow(WORKLOADS[name], divisor), TINY[name], tmp_path)
    assert chained_count(directory) == _brute_force(directory, chained=True)


def test_chained_windows_hold_every_pairwise_result_and_more(tmp_path: Path) -> None:
    """The pairwise app filters the chain's output, so the chain must miss no pairwise result."""
    directory = write_workload(WORKLOADS["zipf3"], TINY["zipf3"], tmp_path)
    pairwise = _brute_force(directory, chained=False)
    assert pairwise == engine_count(directory / "query.json", directory / "events.jsonl")
    assert chained_count(directory) > pairwise > 0


def test_kafka_streams_plan_names_every_input_and_join(tmp_path: Path) -> None:
    directory = write_workload(WORKLOADS["chain4"], 100, tmp_path)
    inputs = KafkaInputs({s: f"t.{s}" for s in "abcd"}, {}, {})
    text = plan_properties(
        directory,
        inputs,
        output="out",
        bootstrap="127.0.0.1:1",
        application_id="app",
        state_dir=tmp_path,
        semantics="pairwise",
        grace_ms=10_000,
        backlog=True,
    )
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["streams"] == "a,b,c,d"
    assert props["stream.b.fields"] == "ts,x,y"
    assert props["step.c.equalities"] == "b.y=y"
    assert props["step.c.rekey"] == "true"
    assert props["streams.max.task.idle.ms"] != "0"


@pytest.mark.parametrize(
    "value",
    [
        b'{"query":"q1","ts":1000042,"tuples":{"a":{"ts":1000001,"k":3}}}',  # the joiner's record
        b'{"ts":1000042,"a":{"ts":1000001,"k":3},"b":{"ts":1000042,"k":3}}',  # Kafka Streams
        b'{"ts":1000042,"a_ts":1000001,"a_k":3,"b_ts":1000042,"b_k":3}',  # Flink and Spark
    ],
)
def test_the_youngest_members_ts_is_read_from_every_systems_result(value: bytes) -> None:
    assert result_ts(value) == 1000042


def _run(workload: str, system: str, records: int, wall: float, cpu: float) -> dict[str, Any]:
    return {
        "workload": workload,
        "system": system,
        "records": records,
        "round": 0,
        "results": 7,
        "wall_s": wall,
        "cpu_s": cpu,
        "broker_cpu_s": 1.0,
        "peak_rss_kb": 2048,
        "cpu_to_first_s": 0.5,
    }


def test_latency_rate_is_half_the_slowest_systems_best() -> None:
    runs = [
        _run("w", "joiner", 30_000, 2.0, 1.0),
        _run("w", "spark", 30_000, 7.0, 9.0),
        _run("w", "spark", 30_000, 6.0, 9.0),
    ]
    assert rates_for_latency(runs, 0, ["w"]) == {"w": 2_500}  # 30,000 / 6 s / 2, two significant digits
    assert rates_for_latency(runs, 1234, ["w", "v"]) == {"w": 1234, "v": 1234}


def test_summary_ratios_are_to_the_one_worker_joiner() -> None:
    runs = [_run("w", "joiner", 100, 2.0, 1.0), _run("w", "flink", 100, 5.0, 4.0)]
    rows = {
        r["system"]: r
        for r in summarise(
            runs,
            [{"workload": "w", "system": "flink", "rate": 10, "p50_ms": 5.0, "p99_ms": 9.0, "max_ms": 12.0}],
        )
    }
    assert rows["flink"]["cpu_vs_joiner"] == 4.0
    assert rows["flink"]["records_per_cpu_s"] == 25
    assert rows["flink"]["latency"]["p99_ms"] == 9.0
    assert "latency" not in rows["joiner"]


def test_tree_meter_counts_the_cpu_of_a_child_that_ended() -> None:
    burn = "import time; end = time.process_time() + 0.4\nwhile time.process_time() < end: pass"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys, time; subprocess.run([sys.executable, '-c', {burn!r}]); time.sleep(90)",
        ]
    )
    try:
        meter = TreeMeter(parent.pid)
        deadline = time.monotonic() + 60  # a loaded machine takes seconds to start two interpreters
        while time.monotonic() < deadline:
            meter.sample()
            if meter.cpu_s >= 0.4:
                break
            time.sleep(0.05)
        assert meter.cpu_s >= 0.4
        assert meter.peak_rss_kb > 0
    finally:
        parent.kill()
        parent.wait()


def test_joiner_workers_get_the_extra_options(tmp_path: Path) -> None:
    inputs = KafkaInputs({"a": "t.a"}, {"a": "k"}, {"a": ("k",)})
    setting = Setting(tmp_path, inputs, "out", "b:9092", "redis://r", Path(sys.executable), tmp_path)
    argv = Joiner(2, ("--idle-timeout-ms=1", "--max-batch=100")).argv(setting)
    assert argv[-2:] == ["--worker-arg=--idle-timeout-ms=1", "--worker-arg=--max-batch=100"]
    assert not any(a.startswith("--worker-arg") for a in Joiner(1).argv(setting))
    assert Joiner(1, profile_dir=tmp_path).argv(setting)[-2:] == ["--py-spy", str(tmp_path / "out.txt")]
    assert "--py-spy" not in Joiner(1).argv(setting)


def test_late_records_are_read_from_the_systems_log(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    assert reported_late(log) is None
    log.write_text('{"query": "q"}\nsome warning\n{"late": {"0": 3, "1": 0}}\n')
    assert reported_late(log) == {"0": 3, "1": 0}
    log.write_text('{"query": "q"}\n')
    assert reported_late(log) is None
