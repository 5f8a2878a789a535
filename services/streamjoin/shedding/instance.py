"""A shedding problem instance: a query's records grouped into instants, ready to simulate.

The paper's discrete-time model: an *instant* is one timestamp; the records of an instant arrive
together, in the order given. Records are taken in timestamp order (stable, so the arrival order
within a timestamp is kept), each window keeps a record for its range (`now - ts <= range`), and
every record gets a sequence number `seq` (its position in timestamp order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streamjoin.query.model import QueryDef, RangeWindow
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
        lifetimes: each window's range.
    """

    query: QueryDef
    factory: EntryFactory
    instants: tuple[Instant, ...]
    records: tuple[Mapping[str, Any], ...]
    offsets: tuple[int, ...]
    instant_of: tuple[int, ...]
    lifetimes: tuple[float, ...]

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
        ShedInputError: a window is not a range window, or a record's importance is bad (the
            message names its line).
    """
    lifetimes: list[float] = []
    for spec in query.inputs:
        if not isinstance(spec.window, RangeWindow):
            raise ShedInputError(
                f"input {spec.stream!r}: shedding is evaluated over time-based (range) windows only"
            )
        lifetimes.append(spec.window.range)
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
    return ShedInstance(
        query, factory, tuple(instants), tuple(records), tuple(offsets), tuple(instant_of), tuple(lifetimes)
    )
