"""Whether Redis may evict keys: streamjoin's state and registry need every key they wrote kept.

A Redis with a memory limit (`maxmemory`) and an eviction policy other than `noeviction` drops keys
once the limit is reached: `allkeys-*` any key, `volatile-*` the keys with a time to live (the
workers' heartbeats and the registry's writer lock). A window table's records evicted while its
metadata survives would make an operator join against a window that silently lost entries, and
nothing downstream could tell. So a worker refuses such a Redis at start (docs/deploy.md, "Redis").
With `noeviction`, a full Redis refuses writes instead: the commit fails, the operator retries, and
nothing is lost.

The memory settings are read with `INFO memory`, which managed services that disable `CONFIG` still
answer; on a Redis Cluster every primary is asked (replicas follow their primary's keys).
"""

from __future__ import annotations

from typing import Any

from redis.asyncio.cluster import RedisCluster

from streamjoin.state.redis.connect import RedisClient

__all__ = ["SAFE_POLICY", "eviction_problem"]

SAFE_POLICY = "noeviction"
"""The one eviction policy that never drops a key: a full Redis refuses writes instead."""


def _evicting(node: str, memory: dict[str, Any]) -> str | None:
    """Describe `node` if its `INFO memory` section lets it evict keys (a limit and a policy that
    evicts); None if it never does.

    >>> print(_evicting("r:1", {"maxmemory": 104857600, "maxmemory_policy": "allkeys-lru"}))
    r:1 (maxmemory 104857600 bytes, maxmemory-policy allkeys-lru)
    >>> _evicting("r:1", {"maxmemory": 0, "maxmemory_policy": "allkeys-lru"}) is None  # no limit
    True
    >>> _evicting("r:1", {"maxmemory": 104857600, "maxmemory_policy": "noeviction"}) is None
    True
    """
    maxmemory = int(memory.get("maxmemory", 0))
    policy = str(memory.get("maxmemory_policy", SAFE_POLICY))
    if maxmemory == 0 or policy == SAFE_POLICY:
        return None
    return f"{node} (maxmemory {maxmemory} bytes, maxmemory-policy {policy})"


async def _evicting_nodes(client: RedisClient) -> list[str]:
    """Describe each node of `client`'s Redis (each primary of a cluster) that may evict keys."""
    if isinstance(client, RedisCluster):
        await client.initialize()  # the nodes are known once the client has connected
        found = [
            _evicting(primary.name, await client.info("memory", target_nodes=primary))
            for primary in client.get_primaries()
        ]
    else:
        kwargs = client.connection_pool.connection_kwargs
        node = kwargs.get("path") or f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
        found = [_evicting(str(node), await client.info("memory"))]
    return [node for node in found if node is not None]


async def eviction_problem(client: RedisClient) -> str | None:
    """Return why `client`'s Redis is unsafe for streamjoin's keys, or None if it never evicts."""
    nodes = await _evicting_nodes(client)
    if not nodes:
        return None
    return (
        f"Redis may evict streamjoin's keys: {', '.join(nodes)}. A window's records evicted "
        f"while its metadata stays would lose join results without a trace; set "
        f"`maxmemory-policy {SAFE_POLICY}` (or no maxmemory) on every node"
    )
