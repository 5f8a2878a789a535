"""Workers on several hosts: one host cut off the network past its session timeout, then brought back.

The broker, Redis and three workers each run in a network namespace of their own ("hosts" joined by
veth pairs to a private bridge, made and removed by the fixture), so the partitions are split across
hosts and every byte between them crosses a link. One worker host's link goes down for longer than
the session timeout: its partitions move to the other two (new owner epochs), and when its link comes
back the stalled worker is fenced, rejoins, and gets partitions again. The output equals the oracle,
each result exactly once.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from tests.joiner.harness import (
    ChunkedProducer,
    JoinerProcess,
    consume_output,
    expected_ids,
    make_workload,
    register_query,
    wait_running,
)
from tests.joiner.ownership import claims, held_by, log_slice, wait_everyone_holds, wait_moved

from streamjoin.dev.kafka_broker import KafkaBroker
from streamjoin.dev.netns import VirtualNetwork, netns_unavailable
from streamjoin.dev.redis_server import EmbeddedRedis
from streamjoin.topics import TopicSpec, create_topics, load_catalog

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow, pytest.mark.integration, pytest.mark.alone]

WORKERS = ("w1", "w2", "w3")
PARTITIONS = 6


@dataclass(frozen=True)
class Hosts:
    """The network, and where the broker and Redis listen on it."""

    network: VirtualNetwork
    bootstrap: str
    redis_url: str


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    """Make the hosts (broker, redis, w1..w3), start the broker and Redis on theirs; remove all after."""
    reason = netns_unavailable()
    if reason is not None:
        pytest.skip(f"network namespaces are needed to simulate several hosts: {reason}")
    with VirtualNetwork(["broker", "redis", *WORKERS]) as network:
        network.start()
        on_broker, on_redis = network.hosts["broker"], network.hosts["redis"]
        broker = KafkaBroker(host=on_broker.address, launcher=on_broker.launcher)
        redis = EmbeddedRedis(host=on_redis.address, launcher=on_redis.launcher)
        try:
            broker.start(tmp_path / "broker")
            redis.start(tmp_path / "redis")
            assert broker.bootstrap is not None and redis.url is not None
            create_topics(broker.bootstrap, load_catalog())  # as the topic job does (the markers' topic)
            yield Hosts(network, broker.bootstrap, redis.url)
        finally:
            redis.stop()
            broker.stop()


def _topic(bootstrap: str, prefix: str) -> str:
    spec = TopicSpec(
        name=f"{prefix}.{uuid.uuid4().hex[:12]}", role="internal", partitions=PARTITIONS,
        config=MappingProxyType({}),
    )  # fmt: skip
    (result,) = create_topics(bootstrap, [spec])
    assert result.outcome == "created", f"creating {spec.name}: {result.outcome} {result.message}"
    return spec.name


def test_a_host_cut_off_past_its_session_timeout_hands_over_and_takes_back(
    hosts: Hosts, tmp_path: Path
) -> None:
    u = uuid.uuid4().hex[:8]
    topics = {s: _topic(hosts.bootstrap, f"in.{s}") for s in "abc"}
    output = _topic(hosts.bootstrap, "out")
    prefix, group, name = f"t{u}:", f"joiner-{u}", f"q{u}"
    w = make_workload(name=name, topics=topics, output=output, partitions=PARTITIONS, per_stream=900,
                      keys=60, seed=31, lateness=2)  # fmt: skip

    def worker(n: str) -> JoinerProcess:
        launcher = hosts.network.hosts[n].launcher
        return JoinerProcess(tmp_path, hosts.bootstrap, hosts.redis_url, group=group, prefix=prefix,
                             name=n, launcher=launcher)  # fmt: skip

    workers = {n: worker(n) for n in WORKERS}
    cut = hosts.network.hosts["w3"]
    held: dict[int, int] = {}  # the partitions w3 held when its link went down, with their epochs
    moved: dict[int, tuple[str, int]] = {}  # those of them w1 or w2 claimed while it was cut off
    back: dict[int, int] = {}  # the partitions w3 claimed once its link came back

    def logs() -> str:
        return "\n".join(f"--- {n} ---\n{j.log_tail()}" for n, j in workers.items())

    async def scenario() -> tuple[Counter[str], list[Any]]:
        await register_query(hosts.redis_url, prefix, w.query_json)
        for worker in workers.values():
            worker.start()
        await wait_running(hosts.redis_url, prefix, name, PARTITIONS, timeout_s=90)
        await wait_everyone_holds(workers)  # one worker may claim every partition before the others join
        producer = ChunkedProducer(hosts.bootstrap, topics, w, chunks=10, pause_s=1.5)
        producer.start()
        await asyncio.sleep(4)
        cut.cut()  # mid-run, batches in flight: w3 can reach neither the broker nor Redis
        held.update(held_by(workers, "w3"))
        try:
            await asyncio.sleep(8)  # past the session timeout (6 s): the group moves its partitions
            moved.update(await wait_moved(workers, "w3", held, timeout_s=40))
        finally:
            cut.restore()
        back_at = {n: j.log_path.stat().st_size for n, j in workers.items()}
        producer.join(timeout=120)
        assert producer.error is None and not producer.is_alive()
        want = expected_ids(w.query, producer.events)
        records = await consume_output(hosts.bootstrap, output, want=sum(want.values()), timeout_s=120,
                                       quiet_s=6)  # fmt: skip
        # w3 rejoins the group and gets partitions in the rebalance that follows
        deadline = time.monotonic() + 45
        while not back and time.monotonic() < deadline:
            back.update(claims(log_slice(workers["w3"], back_at["w3"])))
            await asyncio.sleep(0.5)
        return want, records

    try:
        want, records = asyncio.run(scenario())
    except Exception as exc:
        raise AssertionError(f"{exc}\n{logs()}") from exc
    finally:
        for worker in workers.values():
            worker.stop()
    got = Counter(json.loads(r.value)["id"] for r in records)
    dups = sum(n - 1 for n in got.values() if n > 1)
    assert sum(want.values()) > 500, "the workload should produce a fair number of results"
    assert got == want, (
        f"missing {sum((want - got).values())}, extra {sum((got - want).values())}, duplicates {dups}\n"
        f"{logs()}"
    )
    print(f"w3 held {held}, w1/w2 took {moved} while it was cut off, w3 claimed {back} once back")
    assert held, f"w3 held no partition before it was cut off\n{logs()}"
    assert moved, f"w3 held {held}; w1 and w2 claimed none of them while it was cut off\n{logs()}"
    assert back, f"w3 claimed no partition after its link came back\n{logs()}"
