"""Redis memory per window record, for the sizing rule (docs/performance.md).

Commits `--records` entries of one topic partition through `RedisStateStore.commit`, in batches of
`--batch`, for 1, 2 and 4 queries reading that topic, and prints `used_memory` growth per record
and per (query, record). The records are the joiner benchmark's (71 bytes). Every query holds every
record, as queries whose windows span the whole run would: the shared window table keeps one copy
of each record, and each query a header per entry.

    python bench/redis_memory.py --records 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from streamjoin.dev.redis_server import EmbeddedRedis
from streamjoin.engine.entry import Entry
from streamjoin.state.base import CommitBatch
from streamjoin.state.redis import RedisStateStore

TOPIC = "bench.a"


def record(i: int, pad: int) -> bytes:
    """Return record i: `bench/joiner_throughput.py`'s (73 bytes here) with `pad` = 40."""
    return b'{"ts":%d,"k":%d,"pad":"%s"}' % (100_000 + i, 100_000 + i // 6, b"x" * pad)


async def measure(url: str, queries: int, records: int, batch: int, pad: int) -> dict[str, float]:
    """Commit `records` entries for each of `queries` queries; return bytes per record."""
    store = RedisStateStore(url)
    try:
        before = await store.used_memory()
        for q in range(queries):
            name = f"q{q}"
            epoch = (await store.claim(name, 0, "bench", (TOPIC,))).epoch
            for n, start in enumerate(range(0, records, batch), start=1):
                added = []
                for i in range(start, min(start + batch, records)):
                    raw = record(i, pad)
                    e = Entry(0, 0, i, 100_000 + i, {}, size=len(raw))
                    e.seq = i
                    added.append((e, raw))
                await store.commit(
                    name,
                    0,
                    epoch,
                    CommitBatch(
                        batch=n, offsets={TOPIC: start + batch}, scalars={}, added=added, topics=(TOPIC,)
                    ),
                )
        used = await store.used_memory() - before
        return {
            "queries": queries,
            "records": records,
            "record_bytes": len(record(records // 2, pad)),
            "bytes_per_record": round(used / records, 1),
            "bytes_per_query_record": round(used / records / queries, 1),
        }
    finally:
        await store.aclose()


async def main() -> None:
    """Parse the flags and print one JSON line per query count."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--pad", type=int, default=40, help="record size - 33 bytes")
    args = parser.parse_args()
    for queries in (1, 2, 4):
        # A fresh Redis each time: freed memory (UNLINK frees in the background) would blur it.
        redis = EmbeddedRedis()
        redis.start(Path(tempfile.mkdtemp(prefix="streamjoin-redis-memory-")))
        try:
            assert redis.url is not None
            result = await measure(redis.url, queries, args.records, args.batch, args.pad)
            print(json.dumps(result), flush=True)
        finally:
            redis.stop()


if __name__ == "__main__":
    asyncio.run(main())
