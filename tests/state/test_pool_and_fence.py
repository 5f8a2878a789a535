"""`RedisStateStore` with a sized connection pool (commands wait for a connection instead of failing)
and `check_owner`, the zombie fence of publishes; against the real embedded Redis."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from streamjoin.state.base import FencedError
from streamjoin.state.redis import RedisStateStore


def test_more_concurrent_commands_than_connections_wait_for_one(redis_server: str) -> None:
    async def run() -> int:
        store = RedisStateStore(redis_server, prefix=f"t{uuid.uuid4().hex[:8]}:", max_connections=4)
        try:
            # redis-py's default pool raises "Too many connections" past its size; this one waits
            sizes = await asyncio.gather(*(store.used_memory() for _ in range(300)))
            return len(sizes)
        finally:
            await store.aclose()

    assert asyncio.run(run()) == 300


def test_check_owner_fences_an_older_epoch(redis_server: str) -> None:
    async def run() -> None:
        store = RedisStateStore(redis_server, prefix=f"t{uuid.uuid4().hex[:8]}:")
        try:
            with pytest.raises(FencedError):  # never claimed
                await store.check_owner("q", 0, 1)
            first = await store.claim("q", 0, "w1", ["t.a"])
            await store.check_owner("q", 0, first.epoch)
            second = await store.claim("q", 0, "w2", ["t.a"])
            assert second.epoch > first.epoch
            with pytest.raises(FencedError, match="not publishing"):
                await store.check_owner("q", 0, first.epoch)
            await store.check_owner("q", 0, second.epoch)
        finally:
            await store.aclose()

    asyncio.run(run())
