"""The decision API of a shedding policy, its context, and the registry of policies by name.

A policy is chosen once, when the operator is built (`make_policy`); the engine then talks to it only
through `SheddingPolicy`. Its calls follow the per-instant order of the paper (one *instant* is one
timestamp; an engine processing one record at a time treats each record as its own instant, or each
batch's timestamp group):

1. a window expires a record: `removed(entry)`;
2. every record of the instant arrives: `arrive(entry)` (the policy sets its initial priority from
   the statistics at the start of the instant, before any record of the instant is admitted);
3. each record is put into its window: `admitted(entry)`; if the window is now over its share,
   `victim(candidates)` names the entry to drop among the window's entries, the arriving one
   included, and the window removes it: `removed(victim)`;
4. the records of the instant probe the retained older records of the other windows;
5. `end_instant(now, produced)`: `produced[seq]` is how many results each retained older entry took
   part in at this instant (dynamic policies update their priorities here).

The statistics a policy needs (match counts, importance) it keeps itself from these calls. A new
policy is a class with these five methods plus one `@register_policy("name")` (and its name in
`streamjoin.query.grammar.PolicyName`, so that queries, the CQL and the API may name it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from streamjoin.shedding.entry import ShedEntry

__all__ = ["POLICIES", "PolicyContext", "SheddingPolicy", "make_policy", "register_policy"]


@dataclass(frozen=True, slots=True)
class PolicyContext:
    """What a policy knows of the query when it is built.

    Attributes:
        windows: the number of windows (inputs).
        neighbours: for each window, the windows it joins by an equality.
        lifetimes: for each window, how long a record stays in it (its range; `inf` for rows).
        seed: the seed of randomised policies.
    """

    windows: int
    neighbours: tuple[tuple[int, ...], ...]
    lifetimes: tuple[float, ...] = ()
    seed: int = 0

    def lifetime(self, window: int) -> float:
        """Return the lifetime of records of `window` (`inf` when unknown)."""
        return self.lifetimes[window] if window < len(self.lifetimes) else math.inf


class SheddingPolicy(Protocol):
    """Which entry a window over its share drops; fed with what the windows do."""

    def arrive(self, entry: ShedEntry, now: float) -> None:
        """Set the initial priority of `entry`, arriving now, from the current statistics."""
        ...

    def admitted(self, entry: ShedEntry) -> None:
        """Note that `entry` is now held by its window."""
        ...

    def removed(self, entry: ShedEntry) -> None:
        """Note that `entry` left its window (expired, evicted, or dropped on arrival)."""
        ...

    def victim(self, candidates: Sequence[ShedEntry], now: float) -> ShedEntry:
        """Return the entry to drop among `candidates`: one window's entries, the arriving one included."""
        ...

    def end_instant(self, now: float, produced: Mapping[int, int]) -> None:
        """Update priorities after the probes of an instant; `produced[seq]`: results of each old entry."""
        ...


PolicyFactory = Callable[[PolicyContext], SheddingPolicy]
POLICIES: dict[str, PolicyFactory] = {}
"""The registered policies by name, in registration order."""

_F = TypeVar("_F", bound=PolicyFactory)


def register_policy(name: str) -> Callable[[_F], _F]:
    """Register a policy class (or factory) under `name`."""

    def add(factory: _F) -> _F:
        if name in POLICIES:
            raise ValueError(f"shedding policy {name!r} is registered twice")
        POLICIES[name] = factory
        return factory

    return add


def make_policy(name: str, context: PolicyContext) -> SheddingPolicy:
    """Return a new policy `name` for a query described by `context`.

    Raises:
        KeyError: no policy of that name is registered.
    """
    try:
        factory = POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown shedding policy {name!r}; known: {sorted(POLICIES)}") from None
    return factory(context)
