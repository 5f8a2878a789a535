"""What one window holds under load shedding, as the policy sees it, and how a record leaves it.

`ShedSchedule` (`engine/shedding.py`) keeps, per window, the records its policy holds (in release
order) beside the window table. The window's kind decides when a held record expires and how a
shed record leaves the table, so each kind is one class, chosen once per window (`held_for`):

- a range window (`RangeHeld`): a record expires once the instant is more than `T` after it; a
  shed record leaves its table as an expired one does (`WindowStore.evict`);
- a count window (`RowsHeld`): a record expires once `N` newer records of its group exist,
  counting *every* record of the stream (held, shed or filtered alike: shedding never changes which
  records a count window would hold, so the output stays a sub-multiset of the exact result), the
  records of the current instant included. A shed record keeps its place in the count
  (`MemoryWindowTable.ghost`) and is logged for the host to store again with `passes` 0, so a
  window restored from a checkpoint counts it too; it leaves for good when it would have expired.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from typing import Any

from streamjoin.engine.entry import Entry
from streamjoin.engine.window import MemoryWindowTable, WindowStore
from streamjoin.query.model import InputDef, RangeWindow, RowsWindow
from streamjoin.shedding.entry import ShedEntry

__all__ = ["HeldRecords", "RangeHeld", "RowsHeld", "held_for"]


class HeldRecords(ABC):
    """One window's records held by the policy, in release order, with their engine entries."""

    lifetime: float
    """How long a record may stay (the range; `inf` for a count window): the policy's context."""

    def __init__(self) -> None:
        self.shed: dict[int, ShedEntry] = {}  # by seq, in release order (as the simulator's windows)
        self.engine: dict[int, Entry] = {}
        self.rewritten_log: list[Entry] | None = None
        """Where entries whose stored form changed are logged (the checkpoint journal), if anywhere."""

    def add(self, entry: Entry, shed: ShedEntry) -> None:
        """Hold `entry` (admitted by the policy)."""
        self.shed[shed.seq] = shed
        self.engine[shed.seq] = entry

    def pop(self, seq: int) -> Entry:
        """Stop holding the record `seq` (shed or expired); return its entry."""
        del self.shed[seq]
        return self.engine.pop(seq)

    @abstractmethod
    def expired(self, now: float, arrivals: Sequence[Entry]) -> list[ShedEntry]:
        """Forget and return the held records out of the window at instant `now`.

        `arrivals`: this window's records of the instant, already in its table.
        """

    @abstractmethod
    def leave(self, entry: Entry) -> None:
        """Take `entry` out of the window table: shed, filtered, or without a valid importance."""


class RangeHeld(HeldRecords):
    """A range window's held records: they expire by time."""

    def __init__(self, table: WindowStore, range_: float) -> None:
        super().__init__()
        self._table = table
        self.lifetime = range_

    def expired(self, now: float, arrivals: Sequence[Entry]) -> list[ShedEntry]:
        """Forget the records more than the range before `now` (oldest first)."""
        gone: list[ShedEntry] = []
        for shed in self.shed.values():  # release order is timestamp order: oldest first
            if now - shed.ts <= self.lifetime:
                break
            gone.append(shed)
        for shed in gone:
            self.pop(shed.seq)
        return gone

    def leave(self, entry: Entry) -> None:
        """Evict `entry` as an expired record leaves."""
        self._table.evict(entry)


class RowsHeld(HeldRecords):
    """A count window's held records: they expire once `rows` newer records of their group exist."""

    lifetime = math.inf

    def __init__(self, table: MemoryWindowTable, rows: int) -> None:
        super().__init__()
        self._table = table
        self._rows = rows
        self._order: dict[int, tuple[Any, deque[int]]] = {}  # id(group): (group, held seqs in order)

    def add(self, entry: Entry, shed: ShedEntry) -> None:
        """Hold `entry`, in release order within its group."""
        super().add(entry, shed)
        group = entry.group
        self._order.setdefault(id(group), (group, deque()))[1].append(shed.seq)

    def expired(self, now: float, arrivals: Sequence[Entry]) -> list[ShedEntry]:
        """Forget the held records of the arrivals' groups with `rows` newer records (any) now."""
        gone: list[ShedEntry] = []
        for key in {id(e.group) for e in arrivals}:
            found = self._order.get(key)
            if found is None:
                continue
            group, queue = found
            cut = group.count - self._rows  # every record of the group has a timestamp <= now
            while queue:
                entry = self.engine.get(queue[0])
                if entry is not None and entry.cnt > cut:
                    break
                seq = queue.popleft()
                if entry is not None:  # else shed earlier
                    gone.append(self.shed[seq])
                    self.pop(seq)
            if not queue:
                del self._order[key]
        return gone

    def leave(self, entry: Entry) -> None:
        """Stop holding `entry` in the table but keep its place in the count; log the change."""
        self._table.ghost(entry)
        self._table.stats.expirations += 1
        if self.rewritten_log is not None:
            self.rewritten_log.append(entry)


def held_for(inp: InputDef, table: WindowStore) -> HeldRecords:
    """Return the held records of `inp`'s window.

    Raises:
        ValueError: the input has no window of its own, or a count window is not kept in memory.
    """
    window = inp.window
    if isinstance(window, RangeWindow):
        return RangeHeld(table, float(window.range))
    if isinstance(window, RowsWindow):
        if not isinstance(table, MemoryWindowTable):
            raise ValueError(f"input {inp.stream!r}: a shedding count window needs an in-memory window table")
        return RowsHeld(table, window.rows)
    raise ValueError(f"input {inp.stream!r}: shedding needs a window (range or rows) on every input")
