"""`WindowShedder`: a policy plus the windows' share, in the shape the engine's shedding schedule needs.

The engine keeps its windows; on each insert it asks "this record enters window W: which entries
go?" and removes them. The shedder applies the share (which a runtime control may change: a smaller
budget sheds the excess at the window's next insert) and keeps the policy's statistics in step.

>>> from streamjoin.shedding.policy import PolicyContext, make_policy
>>> shedder = WindowShedder(make_policy("simp", PolicyContext(2, ((1,), (0,)))), share=1)
>>> old, new = ShedEntry(0, 1, 0, 5.0, ((1, (7,)),)), ShedEntry(0, 2, 1, 1.0, ((1, (7,)),))
>>> shedder.arrive(old, 0); shedder.admit(old, [old], 0)
[]
>>> shedder.arrive(new, 1); shedder.admit(new, [old, new], 1)  # the arriving record is the victim
[ShedEntry(window=0, seq=2, ts=1, importance=1.0, keys=((1, (7,)),))]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from streamjoin.shedding.entry import ShedEntry
from streamjoin.shedding.policy import SheddingPolicy

__all__ = ["WindowShedder"]


class WindowShedder:
    """Evict by `policy` so that no window holds more than `share` entries."""

    def __init__(self, policy: SheddingPolicy, share: int) -> None:
        self._policy = policy
        self.share = share

    @property
    def share(self) -> int:
        """The most entries one window may hold."""
        return self._share

    @share.setter
    def share(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"a window's share must be at least 1 record, not {value}")
        self._share = value

    def arrive(self, entry: ShedEntry, now: float) -> None:
        """Announce a record of the current instant (before any record of the instant is admitted)."""
        self._policy.arrive(entry, now)

    def admit(self, entry: ShedEntry, held: Sequence[ShedEntry], now: float) -> list[ShedEntry]:
        """Admit `entry`; return the entries its window must drop (`held` includes `entry`)."""
        self._policy.admitted(entry)
        candidates = list(held)
        victims: list[ShedEntry] = []
        while len(candidates) > self._share:
            victim = self._policy.victim(candidates, now)
            candidates.remove(victim)
            self._policy.removed(victim)
            victims.append(victim)
        return victims

    def expired(self, entry: ShedEntry) -> None:
        """Note that `entry` left its window by expiration."""
        self._policy.removed(entry)

    def end_instant(self, now: float, produced: Mapping[int, int]) -> None:
        """Close an instant: `produced[seq]` results for each retained older entry."""
        self._policy.end_instant(now, produced)
