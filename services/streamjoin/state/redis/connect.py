"""The one place that turns a Redis URL into a client: a single Redis or a Redis Cluster.

Both the state store and the registry connect through `connect`. A URL whose scheme ends in
`+cluster` (`redis+cluster://host:port[,host:port...]`, `rediss+cluster://` for TLS), or
`cluster=True` (`STREAMJOIN_REDIS_CLUSTER=true`) with a plain `redis://` URL, gives a
`redis.asyncio.cluster.RedisCluster` that discovers the other nodes from the ones named and
follows slot moves and failovers; anything else gives a `redis.asyncio.Redis`.

>>> is_cluster_url("redis+cluster://127.0.0.1:7000"), is_cluster_url("redis://127.0.0.1:6379/0")
(True, False)
>>> plain_url("rediss+cluster://h:1,h:2")
('rediss://h:1', ['h:1', 'h:2'])
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from streamjoin.state.base import FencedError, StateUnavailableError

__all__ = ["CLUSTER_SUFFIX", "RedisClient", "connect", "guard", "is_cluster_url", "plain_url"]

_T = TypeVar("_T")

CLUSTER_SUFFIX = "+cluster"

RedisClient: TypeAlias = Redis | RedisCluster
"""What `connect` returns; the commands both share are the ones the store and the registry use."""


def is_cluster_url(url: str) -> bool:
    """Return whether `url` names a Redis Cluster (`redis+cluster://`, `rediss+cluster://`)."""
    scheme, sep, _ = url.partition("://")
    return bool(sep) and scheme.endswith(CLUSTER_SUFFIX)


def plain_url(url: str) -> tuple[str, list[str]]:
    """Return `url` as the `redis://` (or `rediss://`) URL of its first node, and every node's `host:port`."""
    scheme, _, rest = url.partition("://")
    scheme = scheme.removesuffix(CLUSTER_SUFFIX)
    auth, at, hosts_path = rest.rpartition("@")
    hosts = hosts_path.split("/", 1)[0].split("?", 1)[0]
    nodes = [h.strip() for h in hosts.split(",") if h.strip()]
    if not nodes:
        raise ValueError(f"{url!r} names no Redis node")
    return f"{scheme}://{auth}{at}{nodes[0]}", nodes


def connect(
    url: str, *, cluster: bool = False, max_connections: int | None = None, **options: Any
) -> RedisClient:
    """Return a client of `url` (nothing connects before the first command).

    Args:
        url: `redis://`, `rediss://`, `unix://`, or a cluster URL (`redis+cluster://host:port,...`).
        cluster: treat a plain `redis://`/`rediss://` URL as one node of a cluster.
        max_connections: a single Redis' pool size; a command waits (up to its socket timeout) for
            a free connection instead of failing (redis-py's default pool fails past 100, which a
            worker running 200 queries' operators at once reached). None: redis-py's pool. A
            cluster client sizes a pool per node (`max_connections` there too).
        options: keyword arguments of the client (timeouts, `decode_responses`, TLS options).
    """
    if not (cluster or is_cluster_url(url)):
        if max_connections is None:
            return Redis.from_url(url, **options)
        pool = BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=options.get("socket_timeout"), **options
        )
        client = Redis(connection_pool=pool)
        client.auto_close_connection_pool = True
        return client
    if url.startswith("unix://"):
        raise ValueError("a Redis Cluster is reached over TCP, not a unix:// socket")
    first, nodes = plain_url(url)
    startup = [ClusterNode(host, int(port)) for host, _, port in (n.rpartition(":") for n in nodes[1:])]
    options.pop("health_check_interval", None)  # per-connection option of a single Redis only
    if max_connections is not None:
        options["max_connections"] = max_connections
    return RedisCluster.from_url(first, startup_nodes=startup or None, **options)


async def guard(call: Callable[[], Awaitable[_T]]) -> _T:
    """Run one Redis call, turning its failures into the store's errors."""
    try:
        return await call()
    except ResponseError as exc:
        if str(exc).startswith("FENCED"):
            raise FencedError(str(exc)) from None
        raise
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise StateUnavailableError(f"Redis unavailable: {exc}") from exc
