"""The joiner benchmark's workload (`joiner_throughput.py`) on the engine alone: CPU per input record.

3 streams a, b, c; `a.k = b.k = c.k` (exact-key hash join), range windows of 1000 ms, eager
evaluation and expiration. Record i has key i // 6 (streams a b c a b c: 6 records make 8 results),
timestamp i // 10 (10 records per ms) and partition k % 4. One engine per partition, built and fed as
`joiner/batch/builder.py` does: `MultiJoin(journal=True)`, per batch `add` for every record (grouped by
topic-partition, as a Kafka fetch returns them), then `advance` and `take_delta`. Decoding and result
encoding are left out: this measures the engine only.

Rates are per CPU second of this process (`time.process_time`), which other load disturbs less.

    python bench/engine_joiner_workload.py                    # 300k records, all 4 partitions
    python bench/engine_joiner_workload.py --partitions 1     # one partition's engine only
    python bench/engine_joiner_workload.py --interleaved      # batches in arrival order
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from streamjoin.engine import MultiJoin, tune_gc
from streamjoin.query import QueryDef, parse_query

PARTITIONS = 4
STREAMS = "abc"
PAD = "x" * 40

Batch = list[tuple[str, dict[str, Any], int, int, int]]  # stream, record, ts, offset, size


def joiner_query() -> QueryDef:
    """Return the joiner benchmark's query."""
    return parse_query(
        {
            "name": "bench",
            "inputs": [
                {"stream": s, "topic": s, "timestamp": "ts", "window": {"range": 1000}} for s in STREAMS
            ],
            "where": [["a.k", "=", "b.k"], ["b.k", "=", "c.k"]],
            "output": {"topic": "out"},
        }
    )


def batches(n: int, partition: int, batch_size: int, *, interleaved: bool) -> list[Batch]:
    """Return the records of one partition, cut into batches of about `batch_size` records.

    Unless `interleaved`, each batch holds stream a's records, then b's, then c's: the order in
    which the joiner adds the records of one Kafka fetch (by topic-partition).
    """
    offsets = dict.fromkeys(STREAMS, 0)
    rows: Batch = []
    for i in range(n):
        k = i // 6
        if k % PARTITIONS != partition:
            continue
        stream = STREAMS[i % 3]
        ts = i // 10
        record = {"ts": ts, "k": k, "pad": PAD}
        size = len(b'{"ts":%d,"k":%d,"pad":""}' % (ts, k)) + len(PAD)
        rows.append((stream, record, ts, offsets[stream], size))
        offsets[stream] += 1
    out = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        if not interleaved:
            chunk.sort(key=lambda row: STREAMS.index(row[0]))  # stable: arrival order per stream
        out.append(chunk)
    return out


def run(query: QueryDef, work: list[Batch], partition: int) -> tuple[float, int, int]:
    """Feed `work` to one engine like the joiner; return (CPU seconds, records, results)."""
    engine = MultiJoin(query, None, partitions={s: [partition] for s in STREAMS}, journal=True)
    add, advance, take_delta = engine.add, engine.advance, engine.take_delta
    clock = time.process_time
    records = results = 0
    start = clock()
    for chunk in work:
        for stream, record, ts, offset, size in chunk:
            add(stream, record, ts=ts, partition=partition, offset=offset, size=size)
        found = advance()
        delta = take_delta()
        # The joiner reads every list of the delta; touching them keeps the comparison honest.
        _ = (len(delta.added), len(delta.released), len(delta.expired), delta.scalars)
        records += len(chunk)
        results += len(found)
    return clock() - start, records, results


def main() -> None:
    """Run the workload and print CPU per input record."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=300_000, help="records over all partitions")
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help="how many partitions to run")
    parser.add_argument("--batch", type=int, default=1000, help="records per engine per batch")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the fastest is reported")
    parser.add_argument("--interleaved", action="store_true", help="add in arrival order, not by topic")
    args = parser.parse_args()
    tune_gc()
    query = joiner_query()
    work = {
        p: batches(args.records, p, args.batch, interleaved=args.interleaved) for p in range(args.partitions)
    }
    best: tuple[float, int, int] | None = None
    for _ in range(args.repeat):
        cpu = records = results = 0
        for p, chunks in work.items():
            c, r, n = run(query, chunks, p)
            cpu += c
            records += r
            results += n
        if best is None or cpu < best[0]:
            best = (cpu, records, results)
        print(f"run: {cpu / records * 1e6:.3f} µs/record")
    assert best is not None
    cpu, records, results = best
    print(f"records: {records}  results: {results}  ({results / records:.3f} per record)")
    print(f"CPU: {cpu:.3f} s  {cpu / records * 1e6:.3f} µs per input record  {records / cpu:,.0f} records/s")


if __name__ == "__main__":
    main()
