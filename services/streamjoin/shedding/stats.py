"""Match counts: how many retained records of the other windows a record would join now.

The paper (two inputs) estimates a record's matches from the opposite *join memory*: the number of
retained records there with the same join value. For n inputs a record of window i joins the
windows adjacent to i in the join graph; its match estimate is the **product** over those windows of
the number of retained records agreeing with it on every equality edge. For a star or clique of
equalities on one attribute this is exactly the number of results it would take part in with the
windows as they are; for longer chains it counts the direct neighbours only (a record two joins
away depends on the record between). A record that joins no window by equality has estimate 1.

>>> counts = MatchCounts()
>>> r = ShedEntry(0, 1, 0, 1.0, ((1, (5,)),))
>>> s = ShedEntry(1, 2, 0, 1.0, ((0, (5,)),))
>>> counts.matches(r)
0
>>> counts.add(s)
>>> counts.matches(r)
1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

from streamjoin.shedding.entry import ShedEntry

__all__ = ["MatchCounts"]


class MatchCounts:
    """Per (window, neighbour): a counter of the retained entries' keys towards that neighbour."""

    def __init__(self) -> None:
        self._counts: dict[tuple[int, int], Counter[Hashable]] = {}

    def add(self, entry: ShedEntry) -> None:
        """Count `entry`, now retained by its window."""
        for other, key in entry.keys:
            self._counts.setdefault((entry.window, other), Counter())[key] += 1

    def discard(self, entry: ShedEntry) -> None:
        """Stop counting `entry` (it left its window)."""
        for other, key in entry.keys:
            counter = self._counts[(entry.window, other)]
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]

    def matches(self, entry: ShedEntry) -> int:
        """Return the product, over the windows `entry` joins, of the retained records matching it."""
        total = 1
        for other, key in entry.keys:
            counter = self._counts.get((other, entry.window))
            total *= counter[key] if counter is not None else 0
            if total == 0:
                return 0
        return total
