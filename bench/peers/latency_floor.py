"""The watermark's share of the joiner's latency in the Kafka mode: how long each result must wait,
on the paced schedule of a latency run, before every input partition of its operator has shown its
timestamp. No system runs; it is the floor of the joiner's latency on that schedule with zero
processing, broker and producer time.

    python -m bench.peers.latency_floor equi3 --rate 460 --seconds 20

The joiner releases a record (range windows: at the watermark itself) once every input partition
of its operator has shown a timestamp at or past the record's, and a result with its youngest
member. The latency run (`kafka_latency.py`) produces the records of one timestamp when its time
comes, `(ts - ts0) / event_ms_per_s` after the start, and measures a result from the scheduled
time of its youngest member. So a result whose youngest member has timestamp `t` in partition `p`
waits at least `max over inputs s of (next timestamp >= t of s in p - t) / event_ms_per_s`. The
peers emit a result once its last member is processed: their floor is zero.

Results are counted per key, so the workload's inputs must all be keyed by one join value (equi3,
golab5, zipf3; chain4 is re-keyed into one partition); partitions are Kafka's default partitioner's
(murmur2 of the key, as `kafka_inputs.produce` sends them). The results counted are the engine's
over the same records (tests/benchmarks/test_peers_latency_floor.py checks the count); the output
repeats it, to compare with the latency run's `expect`.
"""

from __future__ import annotations

import argparse
import json
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence

from bench.peers.joinplan import plan, topic_keys
from bench.peers.kafka_inputs import PARTITIONS
from bench.peers.workloads import WORKLOADS, Workload, events

__all__ = ["kafka_partition", "latency_floor", "main", "murmur2"]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Return Kafka's murmur2 hash of `data` (a signed 32-bit int, as the Java client's)."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[whole:]
    if tail:
        for i in reversed(range(len(tail))):
            h ^= tail[i] << (8 * i)
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_partition(key: bytes, partitions: int = PARTITIONS) -> int:
    """Return the partition Kafka's default partitioner gives a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def _percentile(ordered: Sequence[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def latency_floor(workload: Workload, rate: int, seconds: float) -> dict[str, float | int]:
    """Return the watermark wait of every result of `workload`'s first `rate x seconds` records on
    the latency run's schedule: count, p50, p99, max and mean in ms."""
    keys = topic_keys(plan(workload.definition()))
    names = [s.name for s in workload.streams]
    windows = {s.name: s.window_ms for s in workload.streams}
    n = max(int(rate * seconds), 1)
    records = list(events(workload, n))
    ts0, ts_end = records[0][1]["ts"], records[-1][1]["ts"]
    event_ms_per_s = (ts_end - ts0) / (n / rate) if ts_end > ts0 else 1000.0
    seen: dict[tuple[str, int], list[int]] = defaultdict(list)  # (input, partition): timestamps
    by_key: dict[int, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    for index, (stream, record) in enumerate(records):
        key = record[keys[stream]]
        seen[(stream, kafka_partition(str(key).encode()))].append(record["ts"])
        by_key[key][stream].append((record["ts"], index))
    for stamps in seen.values():
        stamps.sort()

    def wait_ms(t: int, p: int) -> float:
        waits = []
        for s in names:
            stamps = seen[(s, p)]
            i = bisect_left(stamps, t)
            # none later: the flush records, produced right after the last paced timestamp
            waits.append(stamps[i] - t if i < len(stamps) else ts_end - t)
        return max(waits) / event_ms_per_s * 1000

    samples: list[float] = []
    for key, members in by_key.items():
        p = kafka_partition(str(key).encode())
        for youngest in names:
            for t, index in members[youngest]:
                # the others: inside their window at t and before the youngest (ties by arrival)
                counts = [
                    sum(1 for ts, i in members[s] if t - windows[s] <= ts and (ts, i) < (t, index))
                    for s in names
                    if s != youngest
                ]
                results = 1
                for c in counts:
                    results *= c
                samples.extend([wait_ms(t, p)] * results)
    ordered = sorted(samples)
    return {
        "records": n,
        "results": len(ordered),
        "event_ms_per_s": round(event_ms_per_s, 2),
        "p50_ms": round(_percentile(ordered, 0.50), 1),
        "p99_ms": round(_percentile(ordered, 0.99), 1),
        "max_ms": round(ordered[-1], 1) if ordered else float("nan"),
        "mean_ms": round(sum(ordered) / len(ordered), 1) if ordered else float("nan"),
    }


def main(argv: list[str] | None = None) -> None:
    """Print the watermark's latency floor of one workload at one rate."""
    parser = argparse.ArgumentParser(prog="python -m bench.peers.latency_floor", description=__doc__)
    parser.add_argument("workload", choices=[w for w in WORKLOADS if w != "chain4"])
    parser.add_argument("--rate", type=int, required=True, help="input records/s of the latency run")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of input")
    args = parser.parse_args(argv)
    print(json.dumps({"workload": args.workload, "rate": args.rate,
                      **latency_floor(WORKLOADS[args.workload], args.rate, args.seconds)}))  # fmt: skip


if __name__ == "__main__":
    main()
