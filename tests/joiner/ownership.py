"""Which worker holds which operator partition, read from the workers' logs.

An operator logs `<query>[<partition>]: claimed (epoch <epoch>, ...` each time it claims its partition,
and a partition's epoch only grows, so the worker whose log shows a partition's greatest epoch is the
one that claimed it last: its holder. The fault tests use this to wait until the worker they are about
to freeze or cut off holds something, instead of hoping the group has settled (one worker may claim
every partition before the other joins).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping

from tests.joiner.harness import JoinerProcess

_CLAIM = re.compile(r"operator (\S+)\[(\d+)\]: claimed \(epoch (\d+)")


def claims(text: str, query: str | None = None) -> dict[int, int]:
    """Each partition of `query` (None: of any query) claimed in `text` (a log or a slice of one),
    with the greatest epoch claimed."""
    found: dict[int, int] = {}
    for name, partition, epoch in _CLAIM.findall(text):
        if query is None or name == query:
            found[int(partition)] = max(found.get(int(partition), 0), int(epoch))
    return found


def holders(logs: Mapping[str, str], query: str | None = None) -> dict[int, tuple[str, int]]:
    """Each partition's holder among the named logs, with its epoch: who claimed it last."""
    held: dict[int, tuple[str, int]] = {}
    for name, text in logs.items():
        for partition, epoch in claims(text, query).items():
            if partition not in held or epoch > held[partition][1]:
                held[partition] = (name, epoch)
    return held


def read_logs(workers: Mapping[str, JoinerProcess]) -> dict[str, str]:
    """Each worker's whole log so far."""
    return {
        n: w.log_path.read_text(errors="replace") if w.log_path.exists() else "" for n, w in workers.items()
    }


def log_slice(worker: JoinerProcess, start: int, end: int | None = None) -> str:
    """The part of a worker's log between two of its sizes in bytes (`end` None: to its end now)."""
    return worker.log_path.read_bytes()[start:end].decode(errors="replace")


def held_by(workers: Mapping[str, JoinerProcess], name: str, query: str | None = None) -> dict[int, int]:
    """The partitions (of `query`) worker `name` holds now, with their epochs."""
    return {p: e for p, (who, e) in holders(read_logs(workers), query).items() if who == name}


async def wait_everyone_holds(workers: Mapping[str, JoinerProcess], *, timeout_s: float = 60) -> None:
    """Wait until each worker holds at least one partition: the group has settled with all of them."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        owners = {who for who, _ in holders(read_logs(workers)).values()}
        if owners >= set(workers):
            return
        await asyncio.sleep(0.2)
    now = holders(read_logs(workers))
    raise TimeoutError(f"not every worker held a partition after {timeout_s} s: {now}")


async def wait_moved(
    workers: Mapping[str, JoinerProcess], victim: str, held: Mapping[int, int], *, timeout_s: float
) -> dict[int, tuple[str, int]]:
    """Wait until another worker claimed one of the partitions `victim` held (`held`: with their
    epochs then); return each of them another worker holds now, with its holder and epoch (empty
    after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = holders(read_logs(workers))
        moved = {p: now[p] for p, e in held.items() if p in now and now[p][0] != victim and now[p][1] > e}
        if moved or time.monotonic() >= deadline:
            return moved
        await asyncio.sleep(0.3)
