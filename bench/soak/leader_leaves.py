"""A consumer group whose leader stops cleanly while the group is forming, with aiokafka alone:

    python -m bench.soak.leader_leaves --leave      # LeaveGroup on stop (aiokafka's default)
    python -m bench.soak.leader_leaves --no-leave   # no LeaveGroup, as the joiner's workers stop

Starts the embedded broker and 3 members of one group (`group_stall.MEMBER`: session timeout
6 s) on 6 topics of 6 partitions. Each trial starts one more member (its join makes the group form
again), stops the current leader with SIGTERM half a second later, and waits up to `--wait`
seconds for every live member to hold an assignment of one generation covering all 36 partitions.
A trial that does not settle is followed by one more new member, to show that a newcomer does not
end the wedge; the run stops at the first wedge and exits 1. The embedded broker's coordinator
forgets to clear its leader when the leader leaves while the group forms (docs/reliability.md,
"Fixed: a group wedged by its leader's clean stop").
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

from bench.soak.group_stall import MEMBER, PARTITIONS, TOPICS, read_events, start_member

__all__ = ["main"]


class _Group:
    """The members' processes (`group_stall.MEMBER`) and their logs."""

    def __init__(self, workdir: Path, bootstrap: str, topics: list[str], leave: bool) -> None:
        self.workdir = workdir
        self.members: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        self._argv = [bootstrap, f"leader-{uuid.uuid4().hex[:6]}", ",".join(topics)]
        self._leave = "leave" if leave else "stay"

    def start(self) -> str:
        name = f"m{len(self.members)}"
        log = self.workdir / f"{name}.log"
        argv = [sys.executable, "-c", MEMBER, *self._argv, name, "60000", self._leave]
        self.members[name] = (start_member(argv, log), log)
        return name

    def _events(self) -> list[tuple[float, str, list[str]]]:
        logs = [log for _, log in self.members.values()]
        return [(t, name, what.split()) for t, name, what in read_events(logs)]

    def live(self) -> set[str]:
        return {name for name, (process, _) in self.members.items() if process.poll() is None}

    def leader(self) -> str:
        return [name for _, name, what in self._events() if what[0] == "leader" and name in self.live()][-1]

    def settled_within(self, wait_s: float) -> float | None:
        """Return how long the group took to settle (None: not within `wait_s`)."""
        since = time.time()
        while time.time() - since < wait_s:
            last = {name: (int(what[1]), int(what[3])) for t, name, what in self._events()
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
