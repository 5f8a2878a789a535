"""`RedisStateStore` on a real Redis Cluster whose primary is killed mid-run and its replica promoted.

The replica is made to lag first (frozen with SIGSTOP while commits go on), then the primary is
killed and the replica, resumed, is promoted: the worst case of asynchronous replication. With
`commit_replicas=1` every commit the store acknowledged is on the replica (`WAIT 1`), so after the
failover the committed state (batch number, offsets, outbox) is not behind what was acknowledged;
without it (the control case) the promoted replica is behind, which is why the setting exists.
While the shard has no replica (the old primary is down), commits are refused
(`StateUnavailableError`), never acknowledged unreplicated; once the killed node rejoins as a
replica, commits go on.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streamjoin.dev.redis_cluster import EmbeddedRedisCluster
from streamjoin.state.base import CommitBatch, StateUnavailableError
from streamjoin.state.outbox import OutboxRecord
from streamjoin.state.redis import RedisStateStore
from streamjoin.state.redis.connect import connect

pytestmark = pytest.mark.integration

TOPIC = "orders"
QUERY = "failover"
# Large enough that the commits made while the replica is frozen overflow the loopback socket
# buffers: the rest waits in the primary's output buffer and dies with it (what a slow link loses).
PAD = b"x" * 256 * 1024
LAGGING = 64  # commits made while the replica is frozen (without WAIT): 16 MiB, beyond any socket buffer


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedRedisCluster]:
    """A cluster of its own: the test kills one of its nodes."""
    with EmbeddedRedisCluster(node_timeout_ms=1_000) as c:
        c.start(tmp_path)
        yield c


async def _until(condition: Callable[[], bool], *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def _batch(n: int) -> CommitBatch:
    return CommitBatch(
        batch=n,
        offsets={TOPIC: 10 * n},
        scalars={"n": n},
        outbox={"results": [OutboxRecord(None, b"result-%d" % n + PAD)]},
        topics=(TOPIC,),
    )


async def _commit_until_error(store: RedisStateStore, epoch: int, first: int, acked: list[int]) -> None:
    """Commit batches first, first + 1, ... appending each acknowledged one to `acked`, until one fails."""
    n = first
    while True:
        try:
            await store.commit(QUERY, 0, epoch, _batch(n))
        except (StateUnavailableError, OSError, ConnectionError):
            return
        except Exception:  # the cluster client's own errors while the slot moves
            return
        acked.append(n)
        n += 1


@pytest.mark.parametrize("replicas", [1, 0])
def test_acknowledged_commits_survive_a_primary_failover(
    cluster: EmbeddedRedisCluster, replicas: int
) -> None:
    async def run() -> None:
        url = cluster.url
        assert url is not None
        store = RedisStateStore(url, prefix="fo:", commit_replicas=replicas, commit_wait_ms=500)
        probe = connect(url)
        try:
            checkpoint = await store.claim(QUERY, 0, "w1", [TOPIC])
            await probe.initialize()  # type: ignore[union-attr]  # a RedisCluster
            primary_port = probe.get_node_from_key(store.keys(QUERY, 0).meta).port  # type: ignore[union-attr]
            primary = cluster.node_of_port(int(primary_port))
            (replica,) = cluster.replicas_of(primary)
            acked: list[int] = []
            writer = asyncio.create_task(_commit_until_error(store, checkpoint.epoch, 1, acked))
            await _until(lambda: len(acked) > 5 + random.randrange(20), timeout_s=20)
            before_lag = len(acked)
            cluster.pause(replica)
            # With WAIT the writer stops at its first commit no replica took; without, it goes on.
            await _until(lambda: writer.done() or len(acked) >= before_lag + LAGGING, timeout_s=20)
            cluster.kill(primary)
            cluster.resume(replica)
            await asyncio.wait_for(writer, timeout=30)
            last = acked[-1]
            await asyncio.to_thread(cluster.wait_ok, timeout_ms=30_000)  # the replica took over
            assert cluster.role(replica) == "master"

            # A new owner (no WAIT: the shard has no replica now) reads what the promoted replica holds.
            reader = RedisStateStore(url, prefix="fo:")
            try:
                seen = await reader.claim(QUERY, 0, "w2", [TOPIC])
            finally:
                await reader.aclose()
            if not replicas:  # the control case: acknowledged commits are lost without WAIT
                assert len(acked) > before_lag, "commits went on while the replica lagged"
                assert seen.batch < last
                return
            assert seen.batch >= last, f"batch {last} was acknowledged, the promoted replica has {seen.batch}"
            assert seen.offsets[TOPIC] >= 10 * last
            pending = seen.outboxes["results"].pending
            assert [r.value for r in pending[:last]] == [b"result-%d" % n + PAD for n in range(1, last + 1)]

            # Without a replica a commit is refused, not acknowledged unreplicated.
            with pytest.raises(StateUnavailableError):
                await store.commit(QUERY, 0, seen.epoch, _batch(seen.batch + 1))
            # The killed node comes back as the new primary's replica: commits are acknowledged again.
            await asyncio.to_thread(cluster.restart, primary)
            deadline = time.monotonic() + 30
            while True:
                try:
                    await store.commit(QUERY, 0, seen.epoch, _batch(seen.batch + 1))
                    break
                except StateUnavailableError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)
            assert cluster.role(primary) == "slave"
        finally:
            await store.aclose()
            await probe.aclose()

    asyncio.run(run())
