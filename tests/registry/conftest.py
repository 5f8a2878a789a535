"""Fixtures for the registry tests: a `RegistryStore` on the embedded Redis, with a fresh key prefix."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from streamjoin.registry import RegistryStore


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio (what Faust and uvicorn use)."""
    return "asyncio"


@pytest.fixture
async def registry(any_redis: str) -> AsyncIterator[RegistryStore]:
    """Yield a store whose keys live under a prefix no other test uses."""
    async with RegistryStore(any_redis, prefix=f"test-{uuid.uuid4().hex[:10]}:streamjoin:") as store:
        await store.version()  # connect first: a cluster client discovers its nodes on first use
        yield store
