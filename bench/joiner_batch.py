"""CPU cost of the joiner's batch path without Kafka or Redis: decode, join, encode results.

Feeds the workload of `bench/joiner_throughput.py` (3-way equi-join, range windows of 1 s, keys
with records a b c a b c in one millisecond: 8 results per 6 records) to one partition's
`BatchBuilder.build` in batches, through the operator `OperatorFactory` builds for the joiner (the
engine and its statistics), and prints CPU µs per input record. The end-to-end benchmark shares 2
cores with a broker, Redis and its own producer and consumer; this one measures the worker's own
code, so a change to it shows up without that noise.

    python bench/joiner_batch.py [--records 200000] [--batch 1250] [--profile out.pstats]
        [--inputs json|avro] [--output envelope|flat|avro] [--workload golab5]

`--inputs avro` writes the same records in the schema registry wire format and `--output` picks
the query's output format (docs/formats.md), with the in-memory schema registry. `--workload
golab5` feeds the peers benchmark's golab5 instead (4-way, 14 results per record, JSON in and
out): the cost per result, which that workload's joiner is bound by.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import time

import fastavro
from aiokafka import ConsumerRecord, TopicPartition
from bench.peers.workloads import WORKLOADS, events, query_json

from streamjoin.engine import tune_gc
from streamjoin.formats import frame, result_schema
from streamjoin.joiner.batch.builder import BatchBuilder
from streamjoin.operator import OperatorFactory
from streamjoin.query import QueryDef, parse_query
from streamjoin.schema_registry import MemorySchemaRegistry
from streamjoin.state.outbox import pack_records

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


_AVRO = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "ts", "type": "long"},
        {"name": "k", "type": "long"},
        {"name": "pad", "type": "string"},
    ],
}


def _to_avro(data: dict[str, list[ConsumerRecord[None, bytes]]], schema_id: int) -> None:
    """Re-encode every value of `data` as Avro in the wire format, in place."""
    parsed = fastavro.parse_schema(_AVRO)
    for box in data.values():
        for i, r in enumerate(box):
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, parsed, json.loads(r.value))
            value = frame(schema_id, buffer.getvalue())
            box[i] = ConsumerRecord(
                r.topic, 0, r.offset, r.timestamp, 0, None, value, None, 0, len(value), ()
            )


def bench_query(registry: MemorySchemaRegistry, inputs: str = "json", output: str = "envelope") -> QueryDef:
    """Return the benchmark's query: the 3-way equi-join of `bench/joiner_throughput.py`."""
    out: dict[str, object] = {"topic": "out", "format": output}
    if output == "avro":
        out["schema"] = result_schema("bench", STREAMS, dict.fromkeys(STREAMS, _AVRO))
    return parse_query(
        {
            "name": "bench",
            "inputs": [
                {
                    "stream": s,
                    "topic": f"t.{s}",
                    "timestamp": "ts",
                    "window": {"range": 1000},
                    "format": inputs,
                }
                for s in STREAMS
            ],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
            "output": out,
        }
    )


Batch = dict[TopicPartition, list[ConsumerRecord[None, bytes]]]


def _golab5(n: int, batch: int) -> tuple[QueryDef, list[Batch]]:
    """Return golab5's query and its first n records in batches of `batch`, in arrival order."""
    golab = WORKLOADS["golab5"]
    records: list[ConsumerRecord[None, bytes]] = []
    offsets: dict[str, int] = {}
    for stream, record in events(golab, n):
        topic = f"peers.{stream}"
        value = json.dumps(record, separators=(",", ":")).encode()
        offsets[topic] = offset = offsets.get(topic, -1) + 1
        size = len(value)
        records.append(ConsumerRecord(topic, 0, offset, record["ts"], 0, None, value, None, 0, size, ()))
    batches: list[Batch] = []
    for first in range(0, n, batch):
        messages: Batch = {}
        for r in records[first : first + batch]:
            messages.setdefault(TopicPartition(r.topic, 0), []).append(r)
        batches.append(messages)
    return parse_query(query_json(golab)), batches


def run(
    n: int, batch: int, inputs: str = "json", output: str = "envelope", name: str = "equi3"
) -> tuple[float, int]:
    """Return (CPU seconds, results) of building every batch of an n-record workload."""
    registry = MemorySchemaRegistry()
    if name == "golab5":
        query, batches = _golab5(n, batch)
    else:
        query = bench_query(registry, inputs, output)
        data = workload(n)
        if inputs == "avro":
            _to_avro(data, registry.register("t-value", _AVRO))
        share = batch // 3
        batches = [
            {TopicPartition(f"t.{s}", 0): data[s][first : first + share] for s in STREAMS}
            for first in range(0, n // 3, share)
        ]
    engine = OperatorFactory(query, replan_every=None).build(0, journal=True)
    builder = BatchBuilder(query, 0, "dead", schemas=registry)
    offsets: dict[str, int] = {}
    arrival: dict[str, float] = {}
    results = 0
    start = time.process_time()
    for b, messages in enumerate(batches):
        built = builder.build(
            engine, messages, batch=b + 1, offsets=offsets, trims=[], last_arrival=arrival, now=0.0
        )
        results += len(built.results)
        pack_records(built.results)  # what the commit sends to the outbox
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
    parser.add_argument("--inputs", choices=("json", "avro"), default="json")
    parser.add_argument("--output", choices=("envelope", "flat", "avro"), default="envelope")
    parser.add_argument("--workload", choices=("equi3", "golab5"), default="equi3")
    args = parser.parse_args()
    if args.workload == "golab5" and (args.inputs, args.output) != ("json", "envelope"):
        parser.error("--workload golab5 is JSON in and out")
    tune_gc()
    formats = (args.inputs, args.output, args.workload)
    run(min(args.records, 30_000), args.batch, *formats)  # warm-up
    if args.profile:
        with cProfile.Profile() as prof:
            seconds, results = run(args.records, args.batch, *formats)
        prof.dump_stats(args.profile)
    else:  # the fastest run: other load on the machine only ever adds time
        seconds, results = min(run(args.records, args.batch, *formats) for _ in range(args.repeat))
    print(
        json.dumps(
            {
                "records": args.records,
                "workload": args.workload,
                "inputs": args.inputs,
                "output": args.output,
                "results": results,
                "cpu_us_per_record": round(seconds / args.records * 1e6, 2),
                "cpu_us_per_result": round(seconds / max(results, 1) * 1e6, 2),
                "records_per_cpu_s": round(args.records / seconds),
            }
        )
    )


if __name__ == "__main__":
    main()
