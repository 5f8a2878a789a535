"""The contract between a join operator and its state store (docs/exactly-once.md).

One operator owns one (query, partition). It `claim`s the partition (which fences every earlier
owner), rebuilds its engine from the returned `Checkpoint`, and then commits one `CommitBatch` per
batch of input: the engine delta, the next input offsets, the batch's output records appended to
the outboxes with consecutive sequence numbers, and counters, all or nothing. Published outbox
records are trimmed later (`CommitBatch.trims`, or `trim`). The records themselves are kept once
per (topic, partition) in a window table shared by every query that reads the topic: an entry is a
reference to its record, taken and released in the same commit as the entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from streamjoin.engine.entry import Entry
from streamjoin.state.outbox import OutboxRecord

__all__ = [
    "Checkpoint",
    "CommitBatch",
    "FencedError",
    "OutboxState",
    "StateStore",
    "StateUnavailableError",
    "Trim",
]


class FencedError(RuntimeError):
    """Another owner claimed the partition since this one did: the commit was refused."""


class StateUnavailableError(RuntimeError):
    """The store did not answer (connection refused, timeout); the outcome of a write is unknown."""


@dataclass(slots=True)
class OutboxState:
    """One outbox (results, or dead letters) of an operator.

    `seq`: the last sequence number committed; `acked`: the last one known published (everything
    up to it is trimmed); `acked_offset`: the output offset of record `acked` (-1: none yet);
    `pending`: the records `acked + 1 .. seq`.
    """

    seq: int = 0
    acked: int = 0
    acked_offset: int = -1
    pending: list[OutboxRecord] = field(default_factory=list)


@dataclass(slots=True)
class Checkpoint:
    """Everything committed for one (query, partition), as read back by `claim`."""

    epoch: int
    batch: int
    offsets: dict[str, int]
    """Next offset to read per input topic; empty until the operator was positioned."""
    scalars: dict[str, Any] | None
    entries: list[Entry]
    outboxes: dict[str, OutboxState]
    counters: dict[str, int]
    output_start: dict[str, int]
    """Per outbox, the output partition's end offset when the operator was first positioned."""
    raws: dict[tuple[int, ...], bytes] = field(default_factory=dict)
    """The raw record bytes of each entry, by (input, offset), from the shared window tables; an
    entry of another partition than the operator's (a re-keyed input) by (input, offset, partition)."""
    sources: dict[str, int] = field(default_factory=dict)
    """`CommitBatch.sources` as last committed."""

    @property
    def positioned(self) -> bool:
        """Return True once start offsets were committed."""
        return bool(self.offsets)


@dataclass(frozen=True, slots=True)
class Trim:
    """Published records of one outbox: everything up to `seq`, the last at output offset `offset`."""

    outbox: str
    seq: int
    offset: int


@dataclass(slots=True)
class CommitBatch:
    """What one batch changed; committed atomically by `StateStore.commit`.

    `batch` is the batch number (the previous committed one + 1): a retried commit whose first try
    did apply is recognised and not applied twice.
    """

    batch: int
    offsets: Mapping[str, int]
    scalars: Mapping[str, Any]
    added: Sequence[tuple[Entry, bytes]] = ()
    """New entries with their raw record bytes."""
    released: Sequence[Entry] = ()
    """Entries released in this batch that were added in an earlier one (their `seq` changed)."""
    expired: Sequence[Entry] = ()
    """Entries to delete (never ones added in this same batch)."""
    rewritten: Sequence[Entry] = ()
    """Entries kept whose stored header changed (a count window's record shed under a memory budget
    keeps its place in the count with `passes` 0); never ones added or deleted in this same batch."""
    outbox: Mapping[str, Sequence[OutboxRecord]] = field(default_factory=dict)
    """The batch's output records per outbox (`results`, `dead`), in order: sequence numbers
    `seq + 1 ..` of each."""
    counters: Mapping[str, int] = field(default_factory=dict)
    """Increments of the operator's counters."""
    trims: Sequence[Trim] = ()
    output_start: Mapping[str, int] = field(default_factory=dict)
    topics: Sequence[str] = ()
    """The topic of each input, in input order: it names the shared window table of an entry's
    record. Required when the batch adds or expires entries."""
    sources: Mapping[str, int] = field(default_factory=dict)
    """Re-keyed inputs: the highest source offset read so far per `<stream>:<source partition>`
    (the operator's duplicate filter, docs/exactly-once.md "Re-keyed inputs")."""


class StateStore(Protocol):
    """Where an operator's state lives (Redis in production)."""

    async def claim(self, query: str, partition: int, owner: str, topics: Sequence[str]) -> Checkpoint:
        """Become the owner of (query, partition), fencing earlier owners; return what is committed.

        `topics`: the topic of each input (`CommitBatch.topics`), where the entries' records are.
        """
        ...

    async def commit(self, query: str, partition: int, epoch: int, batch: CommitBatch) -> None:
        """Apply `batch` atomically; raise `FencedError` if `epoch` is no longer the owner's."""
        ...

    async def trim(self, query: str, partition: int, epoch: int, trims: Sequence[Trim]) -> None:
        """Drop published records from the outboxes."""
        ...

    async def check_owner(self, query: str, partition: int, epoch: int) -> None:
        """Raise `FencedError` unless `epoch` is still the owner's (read right before a publish)."""
        ...

    async def drop_query(self, query: str) -> int:
        """Delete every partition's state of `query`; return how many keys went."""
        ...
