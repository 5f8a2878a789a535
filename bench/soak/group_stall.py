"""A consumer group under SIGKILLs close together, with aiokafka alone (no Faust, no joiner):

    python -m bench.soak.group_stall --gap 4 --members 3

Starts the embedded broker, `--members` processes each running one `AIOKafkaConsumer` of one group
(session timeout 6 s, heartbeat 2 s, rebalance timeout 60 s, like the joiner's workers) subscribed
to 6 topics of 6 partitions; optionally freezes the broker (SIGSTOP) for `--freeze-s` seconds;
SIGKILLs member 0, 1, 2, ... `--gap` seconds apart, each restarted a second later; then waits until
every live member holds an assignment of the same generation and all 36 partitions are assigned,
and prints the timeline (each member's joins and assignments) and how long the group took to
settle after the last kill.
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

__all__ = ["MEMBER", "main", "read_events", "start_member"]

TOPICS = 6
PARTITIONS = 6

MEMBER = r"""
import asyncio, logging, signal, sys, time
from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.consumer import group_coordinator
from streamjoin.kafka import stop_without_leaving_group

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
bootstrap, group, topics, name = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
rebalance_ms, leave = int(sys.argv[5]), sys.argv[6] == "leave"
join_leader = group_coordinator.CoordinatorGroupRebalance._on_join_leader

async def on_join_leader(self, response):
    print(f"{time.time():.2f} {name} leader {response.generation_id}", flush=True)
    return await join_leader(self, response)

group_coordinator.CoordinatorGroupRebalance._on_join_leader = on_join_leader

class Listener(ConsumerRebalanceListener):
    def __init__(self, consumer): self.c = consumer
    async def on_partitions_revoked(self, revoked):
        print(f"{time.time():.2f} {name} revoked {len(revoked)}", flush=True)
    async def on_partitions_assigned(self, assigned):
        gen = self.c._coordinator.generation
        print(f"{time.time():.2f} {name} assigned {len(assigned)} gen {gen}", flush=True)

async def main():
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000,
                         heartbeat_interval_ms=2000, rebalance_timeout_ms=rebalance_ms,
                         enable_auto_commit=False, auto_offset_reset="latest")
    c.subscribe(topics, listener=Listener(c))
    print(f"{time.time():.2f} {name} starting", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await c.start()
    while not stop.is_set():
        await asyncio.wait([asyncio.ensure_future(c.getmany(timeout_ms=300))], timeout=0.5)
    if not leave:  # as the joiner's workers stop
        stop_without_leaving_group(c)
    await c.stop()

asyncio.run(main())
"""
"""One member: argv bootstrap, group, topics (comma-separated), name, rebalance timeout (ms), and
"leave" or "stay" (whether SIGTERM stops it with a LeaveGroup). It prints `time name event ...`
lines: starting, leader, revoked, assigned."""


def start_member(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def read_events(logs: list[Path]) -> list[tuple[float, str, str]]:
    events = []
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[0].replace(".", "").isdigit():
                events.append((float(parts[0]), parts[1], parts[2]))
    return sorted(events)


def _settled(events: list[tuple[float, str, str]], members: int, since: float) -> float | None:
    """Return when every member's last assignment (after `since`) was of one generation covering
    every partition, or None."""
    last: dict[str, tuple[float, int, int]] = {}
    for t, name, what in events:
        words = what.split()
        if words[0] == "starting":
            last.pop(name, None)
        elif words[0] == "assigned" and t >= since:
            last[name] = (t, int(words[1]), int(words[3]))
    if len(last) < members or len({g for _, _, g in last.values()}) != 1:
        return None
    if sum(n for _, n, _ in last.values()) != TOPICS * PARTITIONS:
        return None
    return max(t for t, _, _ in last.values())


def main(argv: list[str] | None = None) -> int:
    """Run the reproduction; exit 1 if the group did not settle within `--wait` seconds."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gap", type=float, default=4.0, help="seconds between the kills")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--rebalance-ms", type=int, default=60_000)
    parser.add_argument("--freeze-s", type=float, default=0.0, help="SIGSTOP the broker this long first")
    parser.add_argument("--wait", type=float, default=150.0, help="give up after this long")
    args = parser.parse_args(argv)

    from streamjoin.dev.broker import EmbeddedBroker
    from streamjoin.topics import TopicSpec, create_topics

    workdir = Path(tempfile.mkdtemp(prefix="group-stall-"))
    broker = EmbeddedBroker()
    broker.start(workdir)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        assert broker.bootstrap is not None
        u = uuid.uuid4().hex[:6]
        topics = [f"stall{u}.{i}" for i in range(TOPICS)]
        create_topics(broker.bootstrap, [TopicSpec(t, "internal", PARTITIONS) for t in topics])
        logs = [workdir / f"m{i}.log" for i in range(args.members)]

        def argv_of(i: int) -> list[str]:
            return [sys.executable, "-c", MEMBER, broker.bootstrap or "", f"stall-{u}", ",".join(topics),
                    f"m{i}", str(args.rebalance_ms), "leave"]  # fmt: skip

        procs = [start_member(argv_of(i), logs[i]) for i in range(args.members)]
        deadline = time.monotonic() + 60
        while _settled(read_events(logs), args.members, 0) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        print(f"settled before the kills: {_settled(read_events(logs), args.members, 0) is not None}")
        last_kill = time.time()
        if args.freeze_s > 0 and broker.process is not None and broker.process.pid is not None:
            os.kill(broker.process.pid, signal.SIGSTOP)
            print(f"{time.time():.2f} broker frozen for {args.freeze_s:g} s", flush=True)
            time.sleep(args.freeze_s)
            os.kill(broker.process.pid, signal.SIGCONT)
            time.sleep(max(0.0, args.gap - 1.0))
        for k in range(args.kills):
            i = k % args.members
            os.killpg(procs[i].pid, signal.SIGKILL)
            procs[i].wait()
            last_kill = time.time()
            print(f"{last_kill:.2f} SIGKILL m{i}", flush=True)
            time.sleep(1.0)
            procs[i] = start_member(argv_of(i), logs[i])
            time.sleep(max(0.0, args.gap - 1.0))
        deadline = time.monotonic() + args.wait
        settled = None
        while settled is None and time.monotonic() < deadline:
            time.sleep(0.5)
            settled = _settled(read_events(logs), args.members, last_kill)
        for t, name, what in read_events(logs):
            if t >= last_kill - args.kills * args.gap - 2:
                print(f"{t - last_kill:+8.2f} {name} {what}")
        if settled is None:
            print(f"NOT SETTLED {args.wait:.0f} s after the last kill (logs in {workdir})")
            return 1
        print(f"settled {settled - last_kill:.1f} s after the last kill")
        return 0
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
