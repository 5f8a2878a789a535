"""A shedding problem instance: a query's records grouped into instants, ready to simulate.

The paper's discrete-time model: an *instant* is one timestamp; the records of an instant arrive
together, in the order given. Records are taken in timestamp order (stable, so the arrival order
within a timestamp is kept), and every record gets a sequence number `seq` (its position in
timestamp order). How long a window keeps a record depends on the records only, never on what is
shed, so it is computed here once (`ShedInstance.until`):

- a range window keeps it while `now - ts <= range`;
- a count window (`rows` N, each stream one partition as in replay, per `partition_by` value if
  any) keeps it until `N` newer records of its group have arrived, the records of that instant
  included: a record with `N` newer ones in its own instant is never in its window.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from streamjoin.query.model import QueryDef, RangeWindow, RowsWindow
from streamjoin.shedding.entry import BadImportance, EntryFactory, ShedEntry
from streamjoin.shedding.policy import PolicyContext

__all__ = ["Instant", "ShedInputError", "ShedInstance", "build_instance"]


class ShedInputError(ValueError):
    """The query or an event cannot be evaluated; the message is one line."""


@dataclass(frozen=True, slots=True)
class Instant:
    """The records arriving at one timestamp, in arrival order."""

    now: float
    arrivals: tuple[ShedEntry, ...]


@dataclass(frozen=True, slots=True)
class ShedInstance:
    """A query and its records, as instants.

    Attributes:
        query: the query (its `where` decides which records join).
        factory: builds entries, combines importances.
        instants: the instants in timestamp order.
        records: each record by `seq`.
        offsets: each record's position among its stream's records in the input, by `seq`.
        instant_of: the index of each record's instant, by `seq`.
        lifetimes: each window's range (`inf` for a count window).
        until: the index of the last instant each record is in its window, by `seq` (below its own
            instant for a count window's record that its own instant already pushed out).
    """

    query: QueryDef
    factory: EntryFactory
    instants: tuple[Instant, ...]
    records: tuple[Mapping[str, Any], ...]
    offsets: tuple[int, ...]
    instant_of: tuple[int, ...]
    lifetimes: tuple[float, ...]
    until: tuple[int, ...]

    @property
    def windows(self) -> int:
        """Return the number of windows."""
        return len(self.lifetimes)

    def context(self, seed: int = 0) -> PolicyContext:
        """Return the `PolicyContext` of a policy for this query."""
        return PolicyContext(self.windows, self.factory.neighbours, self.lifetimes, seed)

    def entries(self) -> Iterable[ShedEntry]:
        """Yield every entry in `seq` order."""
        for instant in self.instants:
            yield from instant.arrivals


def build_instance(
    query: QueryDef, events: Iterable[tuple[int, str, float, Mapping[str, Any]]]
) -> ShedInstance:
    """Return the instance of `query` over `events`: (line number, stream, timestamp, record).

    Raises:
        ShedInputError: an input has no window of its own, or a record's importance is bad (the
            message names its line).
    """
    lifetimes: list[float] = []
    for spec in query.inputs:
        if spec.window is None:
            raise ShedInputError(
                f"input {spec.stream!r}: shedding needs a window (range or rows) on every input"
            )
        lifetimes.append(spec.window.range if isinstance(spec.window, RangeWindow) else math.inf)
    factory = EntryFactory(query)
    positions: dict[str, int] = {}
    rows: list[tuple[float, int, int, int, Mapping[str, Any], float]] = []
    for line, stream, ts, record in events:
        window = query.input_index(stream)
        try:
            importance = factory.importance(record)
        except BadImportance as exc:
            raise ShedInputError(f"line {line}: record of {stream!r}: {exc}") from None
        offset = positions.get(stream, 0)
        positions[stream] = offset + 1
        rows.append((ts, len(rows), window, offset, record, importance))
    rows.sort(key=lambda row: (row[0], row[1]))
    instants: list[Instant] = []
    records: list[Mapping[str, Any]] = []
    offsets: list[int] = []
    instant_of: list[int] = []
    pending: list[ShedEntry] = []
    for ts, _, window, offset, record, _importance in rows:
        if pending and pending[0].ts != ts:
            instants.append(Instant(pending[0].ts, tuple(pending)))
            pending = []
        seq = len(records)
        pending.append(factory.entry(window, seq=seq, ts=ts, record=record))
        records.append(record)
        offsets.append(offset)
        instant_of.append(len(instants))
    if pending:
        instants.append(Instant(pending[0].ts, tuple(pending)))
    until = _until(query, instants, records, instant_of)
    return ShedInstance(
        query,
        factory,
        tuple(instants),
        tuple(records),
        tuple(offsets),
        tuple(instant_of),
        tuple(lifetimes),
        until,
    )


def _until(
    query: QueryDef,
    instants: Sequence[Instant],
    records: Sequence[Mapping[str, Any]],
    instant_of: Sequence[int],
) -> tuple[int, ...]:
    """Return the last instant index each record is in its window (see the module doc)."""
    times = [instant.now for instant in instants]
    last = len(instants) - 1
    until = [last] * len(records)
    groups: dict[tuple[int, Hashable], tuple[int, list[int]]] = {}  # (window, value): (N, seqs in order)
    for instant in instants:
        for entry in instant.arrivals:
            window = query.inputs[entry.window].window
            if isinstance(window, RangeWindow):
                until[entry.seq] = bisect_right(times, entry.ts + window.range) - 1
            elif isinstance(window, RowsWindow):
                value = records[entry.seq].get(window.partition_by) if window.partition_by else None
                key = (entry.window, cast(Hashable, value))
                groups.setdefault(key, (window.rows, []))[1].append(entry.seq)
    for rows, seqs in groups.values():
        for j in range(len(seqs) - rows):  # the rows-th newer record pushes it out at its instant
            until[seqs[j]] = instant_of[seqs[j + rows]] - 1
    return tuple(until)
