"""The watermark's latency floor of the Kafka mode (bench/peers/latency_floor.py): Kafka's
partitioner, the result count against the engine's, and the wait of a hand-made schedule."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.peers.engine_count import count as engine_count
from bench.peers.latency_floor import latency_floor, murmur2
from bench.peers.workloads import WORKLOADS, write_workload


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        # the Java client's own test vectors (org.apache.kafka.common.utils.UtilsTest)
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_is_the_java_clients(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@pytest.mark.parametrize(("name", "records"), [("equi3", 3000), ("zipf3", 1500), ("golab5", 2000)])
def test_every_result_of_the_engine_gets_a_wait(name: str, records: int, tmp_path: Path) -> None:
    workload = WORKLOADS[name]
    directory = write_workload(workload, records, tmp_path / name)
    floor = latency_floor(workload, rate=records, seconds=1.0)
    assert floor["results"] == engine_count(directory / "query.json", directory / "events.jsonl")
    assert 0 <= floor["p50_ms"] <= floor["p99_ms"] <= floor["max_ms"]


def _one_key(n: int, rng: random.Random) -> Iterator[tuple[str, dict[str, int]]]:
    del n, rng
    yield "a", {"ts": 1000, "k": 1}
    yield "c", {"ts": 1000, "k": 1}
    yield "b", {"ts": 1020, "k": 1}
    yield "a", {"ts": 1030, "k": 1}
    yield "c", {"ts": 1030, "k": 1}
    yield "b", {"ts": 1030, "k": 1}
    yield "a", {"ts": 1060, "k": 1}
    yield "b", {"ts": 1060, "k": 1}
    yield "c", {"ts": 1060, "k": 1}


def test_a_result_waits_for_the_slowest_input_of_its_partition(tmp_path: Path) -> None:
    workload = dataclasses.replace(WORKLOADS["equi3"], draw=_one_key)
    directory = write_workload(workload, 9, tmp_path / "one-key")
    # 9 records in 1 s over 60 ms of event time: an event-ms lasts 16.7 ms
    floor = latency_floor(workload, rate=9, seconds=1.0)
    # youngest b@1020 (1 result) waits 10 event-ms for a and c to show 1030; the 7 results whose
    # youngest is at 1030 and the 19 at 1060 are released at once (every input shows their time)
    assert floor["results"] == 27 == engine_count(directory / "query.json", directory / "events.jsonl")
    assert (floor["p50_ms"], floor["p99_ms"], floor["max_ms"]) == (0.0, 166.7, 166.7)
