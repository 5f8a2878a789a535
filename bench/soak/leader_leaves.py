"""A consumer group whose leader stops cleanly while the group is forming, with aiokafka alone:

    python -m bench.soak.leader_leaves --leave      # LeaveGroup on stop (aiokafka's default)
    python -m bench.soak.leader_leaves --no-leave   # no LeaveGroup, as the joiner's workers stop

Starts the embedded broker and 3 members of one group (session timeout 6 s) on 4 topics of 6
partitions. Each trial starts one more member (its join makes the group form again), stops the
current leader with SIGTERM half a second later, and waits up to `--wait` seconds for every live
member to hold an assignment of one generation covering all 24 partitions. A trial that does not
settle is followed by one more new member, to show that a newcomer does not end the wedge; the run
stops at the first wedge and exits 1. The embedded broker's coordinator forgets to clear its
leader when the leader leaves while the group forms (docs/reliability.md, "Fixed: a group wedged
by its leader's clean stop").
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

__all__ = ["main"]

TOPICS, PARTITIONS = 4, 6

_MEMBER = r"""
import asyncio, signal, sys, time
from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.consumer import group_coordinator

bootstrap, group, topics, name, leave = sys.argv[1:6]
topics = topics.split(",")
join_leader = group_coordinator.CoordinatorGroupRebalance._on_join_leader

async def on_join_leader(self, response):
    print(f"{time.time():.2f} {name} leader {response.generation_id}", flush=True)
    return await join_leader(self, response)

group_coordinator.CoordinatorGroupRebalance._on_join_leader = on_join_leader

class Listener(ConsumerRebalanceListener):
    def __init__(self, consumer): self.consumer = consumer
    async def on_partitions_revoked(self, revoked): pass
    async def on_partitions_assigned(self, assigned):
        generation = self.consumer._coordinator.generation
        print(f"{time.time():.2f} {name} assigned {len(assigned)} {generation}", flush=True)

async def main():
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000,
                         heartbeat_interval_ms=2000, rebalance_timeout_ms=60000,
                         enable_auto_commit=False, auto_offset_reset="latest")
    c.subscribe(topics, listener=Listener(c))
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await c.start()
    while not stop.is_set():
        await asyncio.wait([asyncio.ensure_future(c.getmany(timeout_ms=300))], timeout=0.5)
    if leave == "0":  # what the joiner's workers do (streamjoin.joiner.app.StayingConsumerThread)
        async def forget_generation(): c._coordinator.reset_generation()
        c._coordinator._maybe_leave_group = forget_generation
    await c.stop()

asyncio.run(main())
"""


class _Group:
    """The members' processes and their logs (lines: `time name event ...`)."""

    def __init__(self, workdir: Path, bootstrap: str, topics: list[str], leave: bool) -> None:
        self.workdir = workdir
        self.members: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        self._group = f"leader-{uuid.uuid4().hex[:6]}"
        self._bootstrap, self._topics, self._leave = bootstrap, ",".join(topics), "1" if leave else "0"

    def start(self) -> str:
        name = f"m{len(self.members)}"
        log = self.workdir / f"{name}.log"
        argv = [sys.executable, "-c", _MEMBER, self._bootstrap, self._group, self._topics, name, self._leave]
        with log.open("ab") as out:
            self.members[name] = (subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                                   start_new_session=True), log)  # fmt: skip
        return name

    def _events(self) -> list[tuple[float, str, list[str]]]:
        events = []
        for _, log in self.members.values():
            for line in log.read_text(errors="replace").splitlines():
                words = line.split()
                if len(words) >= 3 and words[0].replace(".", "").isdigit():
                    events.append((float(words[0]), words[1], words[2:]))
        return sorted(events)

    def live(self) -> set[str]:
        return {name for name, (process, _) in self.members.items() if process.poll() is None}

    def leader(self) -> str:
        return [name for _, name, what in self._events() if what[0] == "leader" and name in self.live()][-1]

    def settled_within(self, wait_s: float) -> float | None:
        """Return how long the group took to settle (None: not within `wait_s`)."""
        since = time.time()
        while time.time() - since < wait_s:
            last = {name: (int(what[1]), int(what[2])) for t, name, what in self._events()
                    if what[0] == "assigned" and t >= since and name in self.live()}  # fmt: skip
            if (set(last) == self.live() and len({g for _, g in last.values()}) == 1
                    and sum(n for n, _ in last.values()) == TOPICS * PARTITIONS):  # fmt: skip
                return time.time() - since
            time.sleep(0.3)
        return None

    def kill(self) -> None:
        for process, _ in self.members.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def main(argv: list[str] | None = None) -> int:
    """Run the trials; exit 1 at the first group that does not settle."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--leave", action=argparse.BooleanOptionalAction, default=True,
                        help="whether a stopping member sends LeaveGroup")  # fmt: skip
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--wait", type=float, default=45.0, help="seconds a trial waits for the group")
    args = parser.parse_args(argv)

    from streamjoin.dev.broker import EmbeddedBroker
    from streamjoin.topics import TopicSpec, create_topics

    workdir = Path(tempfile.mkdtemp(prefix="leader-leaves-"))
    broker = EmbeddedBroker()
    broker.start(workdir)
    assert broker.bootstrap is not None
    topics = [f"leader{uuid.uuid4().hex[:6]}.{i}" for i in range(TOPICS)]
    create_topics(broker.bootstrap, [TopicSpec(t, "internal", PARTITIONS) for t in topics])
    group = _Group(workdir, broker.bootstrap, topics, args.leave)
    try:
        for _ in range(3):
            group.start()
        print(f"settled at first: {group.settled_within(60) is not None}", flush=True)
        for trial in range(args.trials):
            leader, newcomer = group.leader(), group.start()
            time.sleep(0.5)
            group.members[leader][0].send_signal(signal.SIGTERM)
            group.members[leader][0].wait(timeout=20)
            took = group.settled_within(args.wait)
            print(f"trial {trial + 1}: leader {leader} stopped as {newcomer} joined: "
                  + (f"settled in {took:.1f} s" if took is not None else f"NOT settled in {args.wait:g} s"),
                  flush=True)  # fmt: skip
            if took is None:
                group.start()
                again = group.settled_within(30)
                print(f"  one more new member: {'settled' if again is not None else 'still NOT settled'} "
                      f"(logs in {workdir})")  # fmt: skip
                return 1
        print(f"{args.trials} of {args.trials} trials settled (leave={args.leave})")
        return 0
    finally:
        group.kill()
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
