"""CPU cost of the joiner's Redis commits: Redis's and the client's, per input record.

Builds the batches of `bench/joiner_batch.py`'s workload (the 3-way equi-join of
`bench/joiner_throughput.py`, one partition) once, then commits them in order through
`RedisStateStore` into an embedded `redis-server` of its own, and prints Redis's CPU (`INFO cpu`,
user + system) and this process's CPU (packing the script's argument, redis-py) per input record,
each the lowest of `--repeat` rounds (a fresh key prefix each). On the shared benchmark machine the
end-to-end figure moves with other load; this one isolates what a change to the commit script or
its argument costs.

    python bench/redis_commit.py [--records 120000] [--batch 3600] [--repeat 5]

`--batch 3600` is about what an operator of `joiner_throughput.py --workers 1` commits at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

import redis
from aiokafka import TopicPartition

from joiner_batch import STREAMS, bench_query, workload
from streamjoin.dev.redis_server import EmbeddedRedis
from streamjoin.joiner.batch.builder import BatchBuilder, BuiltBatch
from streamjoin.operator import OperatorFactory
from streamjoin.schema_registry import MemorySchemaRegistry
from streamjoin.state.redis import RedisStateStore


def built_batches(n: int, batch: int) -> list[BuiltBatch]:
    """Return the built batches of an n-record workload, `batch` records each."""
    query = bench_query(MemorySchemaRegistry())
    data = workload(n)
    engine = OperatorFactory(query, replan_every=None).build(0, journal=True)
    builder = BatchBuilder(query, 0, "dead")
    offsets: dict[str, int] = {}
    arrival: dict[str, float] = {}
    share = batch // 3
    built = []
    for b, first in enumerate(range(0, n // 3, share)):
        messages = {TopicPartition(f"t.{s}", 0): data[s][first : first + share] for s in STREAMS}
        built.append(
            builder.build(
                engine, messages, batch=b + 1, offsets=offsets, trims=[], last_arrival=arrival, now=0.0
            )
        )
    return built


def redis_cpu(client: redis.Redis) -> float:
    """Return the CPU seconds Redis has used (user + system)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def commit_all(
    url: str, prefix: str, batches: list[BuiltBatch], client: redis.Redis
) -> tuple[float, float]:
    """Claim a fresh partition and commit every batch; return (Redis, client) CPU seconds."""
    store = RedisStateStore(url, prefix=prefix)
    try:
        checkpoint = await store.claim("bench", 0, "bench", [f"t.{s}" for s in STREAMS])
        commits = [replace(b.commit, batch=checkpoint.batch + 1 + i) for i, b in enumerate(batches)]
        redis_before, client_before = redis_cpu(client), time.process_time()
        for commit in commits:
            await store.commit("bench", 0, checkpoint.epoch, commit)
        return redis_cpu(client) - redis_before, time.process_time() - client_before
    finally:
        await store.aclose()


def main() -> None:
    """Print Redis and client CPU µs per input record."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=120_000)
    parser.add_argument("--batch", type=int, default=3_600)
    parser.add_argument("--repeat", type=int, default=5, help="report the lowest of this many rounds")
    args = parser.parse_args()
    batches = built_batches(args.records, args.batch)
    server = EmbeddedRedis()
    with tempfile.TemporaryDirectory() as workdir:
        server.start(Path(workdir))
        try:
            url = server.url or ""
            client = redis.Redis.from_url(url)
            rounds = []
            for r in range(args.repeat):
                rounds.append(asyncio.run(commit_all(url, f"bench{r}:", batches, client)))
                client.flushall()
        finally:
            server.stop()
    n = args.records
    print(
        json.dumps(
            {
                "records": n,
                "batch": args.batch,
                "commits": len(batches),
                "redis_cpu_us_per_record": round(min(r for r, _ in rounds) / n * 1e6, 2),
                "client_cpu_us_per_record": round(min(c for _, c in rounds) / n * 1e6, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
