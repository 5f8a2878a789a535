"""What a `MultiJoin` changed since its last checkpoint, so a store can persist it atomically.

The joiner writes one delta per batch in the same Redis transaction as the batch's input offsets and
its results (the outbox): after a crash, `MultiJoin.restore` rebuilds exactly the state that
produced the last committed results, and nothing is joined twice or lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streamjoin.engine.entry import Entry

__all__ = ["REQUIRED_SCALARS", "EngineDelta", "IncompleteCheckpointError", "Journal", "missing_scalars"]

REQUIRED_SCALARS: tuple[str, ...] = (
    "next_seq",
    "watermark",
    "max_ts",
    "idle",
    "last_released_ts",
    "last_joined_seq",
    "eval_epoch",
    "exp_epoch",
)
"""The scalars `MultiJoin.restore` needs: every delta carries them (the others have defaults)."""


class IncompleteCheckpointError(ValueError):
    """Checkpoint scalars an engine cannot be restored from (a store that lost or never had them)."""


def missing_scalars(scalars: Mapping[str, Any] | None) -> list[str]:
    """Return the `REQUIRED_SCALARS` that `scalars` lacks (all of them for None).

    >>> missing_scalars({})[:2]
    ['next_seq', 'watermark']
    >>> missing_scalars(None) == list(REQUIRED_SCALARS)
    True
    """
    return [name for name in REQUIRED_SCALARS if scalars is None or name not in scalars]


@dataclass(slots=True)
class EngineDelta:
    """Changes since the previous delta.

    `added`: records buffered (their `seq` is set if they were also released); `released`: records
    that entered their windows (persist their new `seq`); `expired`: records that left their windows
    (delete them); `scalars`: the operator's clocks and counters, JSON-serialisable, replaced whole;
    `rewritten`: records still kept whose stored form changed (a count window's record shed under a
    memory budget keeps its place in the count, now with `passes` False: store it again).
    An entry may appear in `added`, `released`, `rewritten` and `expired` of one delta; apply them
    in that order.
    """

    added: list[Entry]
    released: list[Entry]
    expired: list[Entry]
    scalars: dict[str, Any]
    rewritten: list[Entry] = field(default_factory=list)


@dataclass(slots=True)
class Journal:
    """The lists `MultiJoin` appends to while it runs with `journal=True`."""

    added: list[Entry] = field(default_factory=list)
    released: list[Entry] = field(default_factory=list)
    expired: list[Entry] = field(default_factory=list)
    rewritten: list[Entry] = field(default_factory=list)

    def take(self, scalars: dict[str, Any]) -> EngineDelta:
        """Return the changes collected so far and start collecting anew."""
        # The window tables append to `expired` directly (the shedding schedule to `rewritten`), so
        # those lists are copied, not replaced.
        delta = EngineDelta(self.added, self.released, list(self.expired), scalars, list(self.rewritten))
        self.added, self.released = [], []
        self.expired.clear()
        self.rewritten.clear()
        return delta
