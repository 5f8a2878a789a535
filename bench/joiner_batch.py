"""CPU cost of the joiner's batch path without Kafka or Redis: decode, join, encode results.

Feeds the workload of `bench/joiner_throughput.py` (3-way equi-join, range windows of 1 s, keys
with records a b c a b c in one millisecond: 8 results per 6 records) to one partition's
`BatchBuilder.build` in batches, through the operator `OperatorFactory` builds for the joiner (the
engine and its statistics), and prints CPU µs per input record. The end-to-end benchmark shares 2
cores with a broker, Redis and its own producer and consumer; this one measures the worker's own
code, so a change to it shows up without that noise.

    python bench/joiner_batch.py [--records 200000] [--batch 1250] [--profile out.pstats]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import time

from aiokafka import ConsumerRecord, TopicPartition

from streamjoin.engine import tune_gc
from streamjoin.joiner.batch import BatchBuilder
from streamjoin.joiner.outbox import encode_record
from streamjoin.operator import OperatorFactory
from streamjoin.query import parse_query

STREAMS = "abc"


def workload(n: int) -> dict[str, list[ConsumerRecord[None, bytes]]]:
    """Return n records per topic of one partition (keys i // 6, 10 records per ms)."""
    out: dict[str, list[ConsumerRecord[None, bytes]]] = {s: [] for s in STREAMS}
    for i in range(n):
        stream, k, ts = STREAMS[i % 3], i // 6, i // 10
        value = b'{"ts":%d,"k":%d,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}' % (ts, k)
        box = out[stream]
        box.append(ConsumerRecord(f"t.{stream}", 0, len(box), ts, 0, None, value, None, 0, len(value), ()))
    return out


def run(n: int, batch: int) -> tuple[float, int]:
    """Return (CPU seconds, results) of building every batch of an n-record workload."""
    query = parse_query(
        {
            "name": "bench",
            "inputs": [
                {"stream": s, "topic": f"t.{s}", "timestamp": "ts", "window": {"range": 1000}}
                for s in STREAMS
            ],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
            "output": {"topic": "out"},
        }
    )
    data = workload(n)
    engine = OperatorFactory(query, replan_every=None).build(0, journal=True)
    builder = BatchBuilder(query, 0, "dead")
    offsets: dict[str, int] = {}
    arrival: dict[str, float] = {}
    share = batch // 3
    results = 0
    start = time.process_time()
    for b, first in enumerate(range(0, n // 3, share)):
        messages = {TopicPartition(f"t.{s}", 0): data[s][first : first + share] for s in STREAMS}
        built = builder.build(
            engine, messages, batch=b + 1, offsets=offsets, trims=[], last_arrival=arrival, now=0.0
        )
        results += len(built.results)
        [encode_record(r) for r in built.results]  # what the publisher's produce loop reads
    return time.process_time() - start, results


def main() -> None:
    """Print CPU µs per input record and result."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1_250)
    parser.add_argument("--repeat", type=int, default=3, help="report the fastest of this many runs")
    parser.add_argument("--profile", help="write cProfile statistics here")
    args = parser.parse_args()
    tune_gc()
    run(min(args.records, 30_000), args.batch)  # warm-up
    if args.profile:
        with cProfile.Profile() as prof:
            seconds, results = run(args.records, args.batch)
        prof.dump_stats(args.profile)
    else:  # the fastest run: other load on the machine only ever adds time
        seconds, results = min(run(args.records, args.batch) for _ in range(args.repeat))
    print(
        json.dumps(
            {
                "records": args.records,
                "results": results,
                "cpu_us_per_record": round(seconds / args.records * 1e6, 2),
                "cpu_us_per_result": round(seconds / max(results, 1) * 1e6, 2),
                "records_per_cpu_s": round(args.records / seconds),
            }
        )
    )


if __name__ == "__main__":
    main()
