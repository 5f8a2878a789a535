"""Faults a scenario schedules: each is a small definition (when, what) that acts on a `Cluster`.

- `Kill`: SIGKILL a worker, start it again after `down_s`; with `in_flight`, first wait (up to 5 s)
  until it has a batch in flight: results committed to Redis, not yet known to be published;
- `Restart`: a clean restart (SIGTERM, wait for the exit, start again);
- `Freeze`: SIGSTOP a worker for `seconds` (past its session timeout: its partitions move), SIGCONT;
- `RedisCrash`: SIGKILL Redis, start it again after `down_s` with its data (`appendfsync always`)
  or empty (`wipe`);
- `BrokerFreeze`: SIGSTOP the broker for `seconds`, then SIGCONT;
- `BrokerCrash`: SIGKILL an Apache Kafka broker (by default the node leading the most partitions of
  the query's inputs and output), start it again on its data after `down_s`.

`standard_schedule` spreads the issue's list over a run: 6 SIGKILLs (half of them with a batch in
flight), 2 clean restarts, one freeze past the session timeout, Redis killed and restarted with its
data, optionally Redis restarted empty, and a broker freeze.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bench.soak.cluster import Cluster

__all__ = [
    "BrokerCrash",
    "BrokerFreeze",
    "Fault",
    "Freeze",
    "Kill",
    "RedisCrash",
    "Restart",
    "standard_schedule",
]


class Fault(Protocol):
    """One scheduled fault: `at_s` seconds after production starts, `apply` it to the cluster."""

    @property
    def at_s(self) -> float: ...

    def describe(self) -> str:
        """Return what the fault does, in a few words."""
        ...

    async def apply(self, cluster: Cluster) -> dict[str, Any]:
        """Inflict the fault (and end it); return what happened, for the report."""
        ...


@dataclass(frozen=True)
class Kill:
    """SIGKILL worker `worker`; restart it after `down_s`. `in_flight`: wait for a batch in flight first."""

    at_s: float
    worker: int
    in_flight: bool = False
    down_s: float = 1.0

    def describe(self) -> str:
        return f"SIGKILL w{self.worker + 1}" + (" with a batch in flight" if self.in_flight else "")

    async def apply(self, cluster: Cluster) -> dict[str, Any]:
        caught: list[int] = []
        if self.in_flight:
            deadline = time.monotonic() + 5.0
            while not caught and time.monotonic() < deadline:
                caught = await asyncio.to_thread(cluster.in_flight, self.worker)
                if not caught:
                    await asyncio.sleep(0.01)
        with cluster.hold(self.worker):
            cluster.workers[self.worker].kill()
            await asyncio.sleep(self.down_s)
            cluster.workers[self.worker].start()
        return {"in_flight_partitions": caught}


@dataclass(frozen=True)
class Restart:
    """Stop worker `worker` cleanly (SIGTERM) and start it again."""

    at_s: float
    worker: int

    def describe(self) -> str:
        return f"clean restart of w{self.worker + 1}"

    async def apply(self, cluster: Cluster) -> dict[str, Any]:
        began = time.monotonic()
        # The worker bounds its own shutdown (9 s); on a loaded machine its exit can take longer,
        # and the harness's default 10 s would turn the clean restart into a SIGKILL.
        with cluster.hold(self.worker):
            code = await asyncio.to_thread(cluster.workers[self.worker].stop, 30_000)
            cluster.workers[self.worker].start()
        return {"exit_code": code, "stop_s": round(time.monotonic() - began, 1)}


@dataclass(frozen=True)
class Freeze:
    """SIGSTOP worker `worker` for `seconds`, then SIGCONT."""

    at_s: float
    worker: int
    seconds: float

    def describe(self) -> str:
        return f"freeze w{self.worker + 1} for {self.seconds:g} s"

    async def apply(self, cluster: Cluster) -> dict[str, Any]:
        cluster.signal_worker(self.worker, signal.SIGSTOP)
        try:
            await asyncio.sleep(self.seconds)
        finally:
            cluster.signal_worker(self.worker, signal.SIGCONT)
        return {}


@dataclass(frozen=True)
class RedisCrash:
    """SIGKILL Redis; after `down_s` start it again, with its data or (`wipe`) empty."""

    at_s: float
    down_s: float = 3.0
    wipe: bool = False

    def describe(self) -> str:
        return f"Redis killed, restarted {'EMPTY' if self.wipe else 'with its data'} after {self.down_s:g} s"

    async def apply(self, cluster: Cluster) -> dict[str, Any]:
        await asyncio.to_thread(cluster.redis.crash)
        await asyncio.sleep(self.down_s)
        if self.wipe:
            cluster.redis.wipe()
        await asyncio.to_thread(cluster.redis.start)
        return {}


@dataclass(frozen=True)
class BrokerFreeze:
    """SIGSTOP the broker for `seconds`, then SIGCONT."""

    at_s: float
    seconds: float

    def describe(self) -> str:
        return f"broker frozen for {self.seconds:g} s"

    async def apply(self, cluster: Cluster) -> dict[str, Any]:
        cluster.pause_broker(True)
        try:
            await asyncio.sleep(self.seconds)
        finally:
            cluster.pause_broker(False)
        return {}


@dataclass(frozen=True)
class BrokerCrash:
    """SIGKILL a Kafka broker node; after `down_s` start it again on its ports and data and wait
    until it serves. `node`: a KRaft node id, or "leader": the node leading the most partitions of
    the query's input and output topics (the lowest id on a tie; a single node leads them all)."""

    at_s: float
    down_s: float = 3.0
    node: int | Literal["leader"] = "leader"

    def describe(self) -> str:
        which = "the leading broker" if self.node == "leader" else f"broker {self.node}"
        return f"{which} SIGKILLed, restarted on its data after {self.down_s:g} s"

    async def apply(self, cluster: Cluster) -> dict[str, Any]:
        leaders = await asyncio.to_thread(cluster.leaders, cluster.query_topics)
        led = Counter(leaders.values())
        node = self.node if isinstance(self.node, int) else min(led, key=lambda n: (-led[n], n))
        try:
            coordinator: int | None = await asyncio.to_thread(cluster.group_coordinator)
        except Exception:  # the group's description is a detail of the report, not the fault
            coordinator = None
        killed = time.monotonic()
        await asyncio.to_thread(cluster.kill_broker, node)
        await asyncio.sleep(self.down_s)
        restarting = time.monotonic()
        await asyncio.to_thread(cluster.restart_broker, node)
        partitions: dict[str, list[int]] = {}
        for (topic, p), leader in sorted(leaders.items()):
            if leader == node:
                partitions.setdefault(topic, []).append(p)
        return {"broker": node, "led_partitions": partitions, "group_coordinator": coordinator == node,
                "restart_s": round(time.monotonic() - restarting, 1),
                "down_s": round(time.monotonic() - killed, 1)}  # fmt: skip


def standard_schedule(
    *,
    span_s: float,
    workers: int = 3,
    kills: int = 6,
    restarts: int = 2,
    freeze_s: float = 14.0,
    redis_restart: bool = True,
    redis_empty: bool = False,
    broker_freeze_s: float = 30.0,
    start_s: float = 5.0,
    seed: int = 3,
) -> tuple[Fault, ...]:
    """Return the issue's faults spread evenly over `[start_s, start_s + span_s]`, in a shuffled order
    (fixed by `seed`); every other kill waits for a batch in flight. Zero or false leaves a fault out."""
    rng = random.Random(seed)
    kinds: list[str] = ["kill"] * kills + ["restart"] * restarts
    kinds += ["freeze"] * (freeze_s > 0) + ["redis"] * redis_restart + ["broker"] * (broker_freeze_s > 0)
    rng.shuffle(kinds)
    if redis_empty:
        kinds.append("redis-empty")  # last: what follows it would only measure the rebuild again
    step = span_s / max(len(kinds), 1)
    faults: list[Fault] = []
    killed = 0
    for i, kind in enumerate(kinds):
        at, worker = start_s + i * step, rng.randrange(workers)
        if kind == "kill":
            faults.append(Kill(at, worker, in_flight=killed % 2 == 0))
            killed += 1
        elif kind == "restart":
            faults.append(Restart(at, worker))
        elif kind == "freeze":
            faults.append(Freeze(at, worker, freeze_s))
        elif kind == "redis":
            faults.append(RedisCrash(at))
        elif kind == "redis-empty":
            faults.append(RedisCrash(at, wipe=True))
        else:
            faults.append(BrokerFreeze(at, broker_freeze_s))
    return tuple(faults)
