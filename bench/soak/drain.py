"""When a scenario is drained: every produced input record has been processed by an operator.

An operator commits, in its partition's meta hash in Redis, the next offset of every topic it
reads: the input topics themselves when the query's inputs are keyed on the join attribute, else
the query's internal (re-keyed) topics, each fed by one repartitioner per source partition whose
position (the next source offset re-keyed and acknowledged) has its own hash. A scenario is
drained when every source partition's produced records are behind its operator's offset or its
repartitioner's position, and every internal partition's operator offset has reached the end of
that partition.

`drain` waits for that, but not for ever: it gives up at a deadline, and early when nothing moved
(no offset, no position) for `stall_s` seconds (a group without assignments, a worker retrying the
same record), and then says which partitions are behind and by how much.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Drained", "InputPositions", "PositionSource", "drain"]

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class InputPositions:
    """What the operators and the repartitioners committed, read from Redis at one moment."""

    operators: dict[TopicPartition, int]
    """(topic, partition) -> the next offset an operator will read (input or internal topic)."""
    repartitioners: dict[TopicPartition, int]
    """(source topic, partition) -> the next source offset a repartitioner will re-key."""

    def source(self, tp: TopicPartition) -> int:
        """Return how far source partition `tp` was taken: by its operator, else its repartitioner."""
        return self.operators.get(tp, self.repartitioners.get(tp, 0))

    def internal(self, sources: set[str]) -> dict[TopicPartition, int]:
        """Return the operators' offsets of the topics that are not sources (the re-keyed ones)."""
        return {tp: offset for tp, offset in self.operators.items() if tp[0] not in sources}


class PositionSource(Protocol):
    """What `drain` asks of the cluster (`Cluster` implements it)."""

    def positions(self, streams: Mapping[str, str]) -> InputPositions:
        """Return the operators' and repartitioners' positions of inputs `streams` (name -> topic)."""
        ...

    def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Return the end offset of each of `tps` on the broker."""
        ...


@dataclass(frozen=True)
class Drained:
    """How a drain ended."""

    behind: dict[str, list[int]]
    """Partitions not fully processed: "topic[p]" -> [committed, produced or end offset]; {}: drained."""
    reason: str
    """"" when drained; else why the wait stopped (deadline, no progress)."""


def _behind(
    positions: InputPositions, want: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]
) -> dict[str, list[int]]:
    out = {
        f"{t}[{p}]": [positions.source((t, p)), n]
        for (t, p), n in want.items()
        if positions.source((t, p)) < n
    }
    internal = positions.internal({t for t, _ in want})
    out.update({f"{t}[{p}]": [o, ends[t, p]] for (t, p), o in internal.items() if o < ends.get((t, p), 0)})
    return out


async def drain(
    cluster: PositionSource,
    streams: Mapping[str, str],
    want: Mapping[TopicPartition, int],
    partitions: int,
    *,
    deadline: float,
    stall_s: float,
) -> Drained:
    """Wait until every record of `want` ((source topic, partition) -> records produced) is processed;
    see the module. Raise if more was committed than produced."""
    sources = {t for t, _ in want}
    behind: dict[str, list[int]] = {f"{t}[{p}]": [0, n] for (t, p), n in want.items()}
    moved, last = time.monotonic(), -1
    while True:
        try:
            positions = await asyncio.to_thread(cluster.positions, streams)
            internal = positions.internal(sources)
            ends = await asyncio.to_thread(cluster.end_offsets, sorted(internal))
        except Exception:  # Redis or the broker briefly unreachable: try again
            positions, internal, ends = None, {}, {}
        if positions is not None:
            over = {tp: (positions.source(tp), n) for tp, n in want.items() if positions.source(tp) > n}
            if over:
                raise RuntimeError(f"more input committed than produced: {over}")
            behind = _behind(positions, want, ends)
            rekeyed = {t for t, p in want if (t, p) not in positions.operators}
            if len(internal) < len(rekeyed) * partitions:  # an operator has not started yet
                behind["internal topics"] = [len(internal), len(rekeyed) * partitions]
            if not behind:
                return Drained({}, "")
            total = sum(positions.operators.values()) + sum(positions.repartitioners.values())
            if total != last:
                moved, last = time.monotonic(), total
        now = time.monotonic()
        if now - moved > stall_s:
            return Drained(behind, f"no offset moved for {stall_s:.0f} s")
        if now > deadline:
            return Drained(behind, "the deadline passed")
        await asyncio.sleep(0.5)
