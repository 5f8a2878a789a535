"""A record as the engine holds it: the input record plus where it came from and where it sits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Entry"]


class Entry:
    """One input record inside the engine.

    `seq` is the release order: the engine releases records in timestamp order once the watermark
    allows, so a smaller `seq` means older (ts, then arrival). A result is emitted by its member with
    the largest `seq`, which is what makes every result appear exactly once whatever the join order.
    `cnt` is the record's position in its rows group (1-based), used for count-window membership.
    `extra` is the host's and never read by the engine: the joiner keeps the record's raw bytes and
    its spliced output pieces there, so they live and die with the entry.
    """

    __slots__ = (
        "cnt",
        "extra",
        "group",
        "input",
        "offset",
        "partition",
        "passes",
        "record",
        "seq",
        "size",
        "ts",
    )

    def __init__(
        self,
        input: int,
        partition: int,
        offset: int,
        ts: float,
        record: Mapping[str, Any],
        size: int = 0,
        extra: Any = None,
    ) -> None:
        self.input = input
        self.partition = partition
        self.offset = offset
        self.ts = ts
        self.record = record
        self.size = size
        self.seq = -1
        self.cnt = 0
        self.group: Any = None
        self.passes = True
        self.extra = extra

    def __repr__(self) -> str:
        return (
            f"Entry(input={self.input}, p={self.partition}, off={self.offset}, ts={self.ts}, seq={self.seq})"
        )
