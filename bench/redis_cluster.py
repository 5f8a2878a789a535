"""The cost per commit of a Redis Cluster, and of `WAIT 1` on it (docs/deploy.md, "Redis Cluster").

Starts the embedded single Redis and the embedded Redis Cluster (3 primaries, 3 replicas, all on
this machine's loopback) and commits `--commits` batches of `--batch` window records (the joiner
benchmark's 73-byte records, one result each) through `RedisStateStore.commit`, from `--operators`
operators at once (one partition each), for: the single Redis, the cluster, and the cluster with
`commit_replicas=1`. Prints the mean and p99 commit latency and the commits per second, as JSON.

    python bench/redis_cluster.py --commits 1000 --batch 100 --operators 1
    python bench/redis_cluster.py --commits 500 --batch 100 --operators 6
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from streamjoin.dev.redis_cluster import EmbeddedRedisCluster
from streamjoin.dev.redis_server import EmbeddedRedis
from streamjoin.engine.entry import Entry
from streamjoin.state.base import CommitBatch
from streamjoin.state.redis import RedisStateStore

TOPIC = "bench.a"


def _record(i: int) -> bytes:
    return b'{"ts":%d,"k":%d,"pad":"%s"}' % (100_000 + i, 100_000 + i // 6, b"x" * 40)


def _batch(n: int, size: int) -> CommitBatch:
    added = []
    for i in range((n - 1) * size, n * size):
        raw = _record(i)
        entry = Entry(0, 0, i, 100_000 + i, {}, size=len(raw))
        entry.seq = i
        added.append((entry, raw))
    return CommitBatch(
        batch=n,
        offsets={TOPIC: n * size},
        scalars={},
        added=added,
        outbox={"results": [b"result-%d" % n]},
        topics=(TOPIC,),
    )


async def _operator(store: RedisStateStore, partition: int, commits: int, size: int) -> list[float]:
    epoch = (await store.claim("bench", partition, "bench", (TOPIC,))).epoch
    batches = [_batch(n, size) for n in range(1, commits + 1)]
    latencies = []
    for batch in batches:
        started = time.perf_counter()
        await store.commit("bench", partition, epoch, batch)
        latencies.append(time.perf_counter() - started)
    return latencies


async def measure(url: str, replicas: int, commits: int, size: int, operators: int) -> dict[str, float]:
    """Commit from `operators` partitions at once; return latency and rate figures."""
    store = RedisStateStore(url, prefix=f"bench{time.monotonic_ns()}:", commit_replicas=replicas)
    try:
        await store.ping()
        started = time.perf_counter()
        runs = await asyncio.gather(*(_operator(store, p, commits, size) for p in range(operators)))
        elapsed = time.perf_counter() - started
    finally:
        await store.aclose()
    latencies = sorted(x for run in runs for x in run)
    return {
        "mean_ms": round(statistics.fmean(latencies) * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
        "commits_per_s": round(len(latencies) / elapsed, 1),
    }


def main() -> None:
    """Run the three configurations and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=1000, help="commits per operator")
    parser.add_argument("--batch", type=int, default=100, help="window records per commit")
    parser.add_argument("--operators", type=int, default=1, help="operators committing at once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        single = EmbeddedRedis()
        single.start(Path(tmp) / "single")
        try:
            with EmbeddedRedisCluster() as cluster:
                cluster.start(Path(tmp) / "cluster")
                assert single.url is not None and cluster.url is not None
                for name, url, replicas in (
                    ("single", single.url, 0),
                    ("cluster", cluster.url, 0),
                    ("cluster+WAIT1", cluster.url, 1),
                ):
                    figures = asyncio.run(measure(url, replicas, args.commits, args.batch, args.operators))
                    row = {"redis": name, "batch": args.batch, "operators": args.operators, **figures}
                    print(json.dumps(row), flush=True)
        finally:
            single.stop()


if __name__ == "__main__":
    main()
