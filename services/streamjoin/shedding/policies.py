"""The six online shedding policies of Ojewole et al. (and Das et al.'s PROB), one class each.

Every policy drops the entry of lowest *rank* among a window's entries (the arriving one included);
ranks are tuples compared in order and always end with (timestamp, seq), so among equals the
oldest goes. `m` is the entry's match estimate (`MatchCounts`: retained records of the windows it
joins with the same key, multiplied over those windows), `imp` its importance:

- `random`: a victim drawn uniformly (seeded), whatever the records hold.
- `frequency` (PROB): rank `(m,)` fixed on arrival: keep the records likely to find matches.
- `simp`: rank `(imp,)` fixed on arrival.
- `simpprob`: rank `(imp * m, imp, m)` fixed on arrival.
- `dimpprob`: as `simpprob`, but `m` is re-counted for every retained entry after each instant.
- `dgl` (dynamic gain/loss): priority `imp` on arrival; after each instant a retained older entry
  that took part in a result gains `GAIN * imp * m * remaining lifetime`, one that did not has its
  priority multiplied by `DECAY`.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from streamjoin.shedding.entry import ShedEntry
from streamjoin.shedding.policy import PolicyContext, register_policy
from streamjoin.shedding.stats import MatchCounts

__all__ = [
    "DglPolicy",
    "DimpprobPolicy",
    "FrequencyPolicy",
    "RandomPolicy",
    "SimpPolicy",
    "SimpprobPolicy",
]


@register_policy("random")
class RandomPolicy:
    """Drop a uniformly drawn entry (the paper's RAND), from a generator seeded by the query."""

    def __init__(self, context: PolicyContext) -> None:
        self._rng = random.Random(context.seed)

    def arrive(self, entry: ShedEntry, now: float) -> None:
        """Nothing to rank."""

    def admitted(self, entry: ShedEntry) -> None:
        """Nothing to count."""

    def removed(self, entry: ShedEntry) -> None:
        """Nothing to count."""

    def victim(self, candidates: Sequence[ShedEntry], now: float) -> ShedEntry:
        """Return a candidate drawn uniformly."""
        return candidates[self._rng.randrange(len(candidates))]

    def end_instant(self, now: float, produced: Mapping[int, int]) -> None:
        """Nothing to update."""


class _Ranked(ABC):
    """Shared machinery: match counts over retained entries, a rank per entry, drop the lowest."""

    def __init__(self, context: PolicyContext) -> None:
        self._context = context
        self._counts = MatchCounts()
        self._rank: dict[int, tuple[float, ...]] = {}
        self._held: dict[int, ShedEntry] = {}
        self._arrived: set[int] = set()

    @abstractmethod
    def _initial(self, entry: ShedEntry, matches: int) -> tuple[float, ...]:
        """Return the rank of `entry` on arrival, given its match estimate."""

    def arrive(self, entry: ShedEntry, now: float) -> None:
        """Rank `entry` from the match counts at the start of its instant."""
        self._rank[entry.seq] = self._initial(entry, self._counts.matches(entry))
        self._arrived.add(entry.seq)

    def admitted(self, entry: ShedEntry) -> None:
        """Count `entry` as retained."""
        self._held[entry.seq] = entry
        self._counts.add(entry)

    def removed(self, entry: ShedEntry) -> None:
        """Forget `entry`."""
        if self._held.pop(entry.seq, None) is not None:
            self._counts.discard(entry)
        self._rank.pop(entry.seq, None)

    def victim(self, candidates: Sequence[ShedEntry], now: float) -> ShedEntry:
        """Return the candidate of lowest rank; the oldest among equals."""
        return min(candidates, key=lambda e: (*self._rank[e.seq], e.ts, e.seq))

    def end_instant(self, now: float, produced: Mapping[int, int]) -> None:
        """Static ranks: only forget which entries arrived in this instant."""
        self._arrived.clear()


@register_policy("frequency")
class FrequencyPolicy(_Ranked):
    """Das et al.'s PROB from window statistics: keep the records with most matches."""

    def _initial(self, entry: ShedEntry, matches: int) -> tuple[float, ...]:
        return (matches,)


@register_policy("simp")
class SimpPolicy(_Ranked):
    """SIMP: keep the most important records."""

    def _initial(self, entry: ShedEntry, matches: int) -> tuple[float, ...]:
        return (entry.importance,)


@register_policy("simpprob")
class SimpprobPolicy(_Ranked):
    """SIMPPROB: importance times matches, fixed on arrival; ties by importance, then matches."""

    def _initial(self, entry: ShedEntry, matches: int) -> tuple[float, ...]:
        return (entry.importance * matches, entry.importance, matches)


@register_policy("dimpprob")
class DimpprobPolicy(SimpprobPolicy):
    """DIMPPROB: SIMPPROB's rank, re-counted for every retained older entry after each instant."""

    def end_instant(self, now: float, produced: Mapping[int, int]) -> None:
        """Re-rank every retained entry that did not arrive in this instant."""
        for seq, entry in self._held.items():
            if seq not in self._arrived:
                self._rank[seq] = self._initial(entry, self._counts.matches(entry))
        self._arrived.clear()


@register_policy("dgl")
class DglPolicy(_Ranked):
    """DGL: a cumulative priority that grows with results and decays without them."""

    GAIN = 1.0
    DECAY = 0.9

    def _initial(self, entry: ShedEntry, matches: int) -> tuple[float, ...]:
        return (entry.importance,)

    def end_instant(self, now: float, produced: Mapping[int, int]) -> None:
        """Raise the priority of entries that joined in this instant, decay the others'."""
        for seq, entry in self._held.items():
            if seq in self._arrived:
                continue
            (priority,) = self._rank[seq]
            if produced.get(seq, 0) > 0:
                lifetime = self._context.lifetime(entry.window)
                remaining = 1.0 if math.isinf(lifetime) else max(lifetime - (now - entry.ts), 0.0)
                priority += self.GAIN * entry.importance * self._counts.matches(entry) * remaining
            else:
                priority *= self.DECAY
            self._rank[seq] = (priority,)
        self._arrived.clear()
