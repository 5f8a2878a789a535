"""`SourceClock`: the largest valid timestamp a repartitioner has re-keyed from its source partition
(its progress markers carry it to every operator; docs/joiner.md, "Re-keyed inputs").

A record counts when the operators' reader would accept it: the same `RecordReader` rules and
`max_future` bound, whose slack grows with the wall time since the clock last moved. A clock taken
over from a committed position or a mark `resume`s its reader too: a fresh reader bounds nothing
until its partition has shown two records, and a record far ahead read first after a restart would
move the clock, and with it every operator's clock of this source partition, past every later
record (the operators would then count that partition's records late and lose their results).
"""

from __future__ import annotations

from typing import Any

from streamjoin.engine import MalformedRecord, RecordReader
from streamjoin.query.model import QueryDef

__all__ = ["SourceClock"]


class SourceClock:
    """The largest valid timestamp of one source partition of one re-keyed input."""

    def __init__(
        self, query: QueryDef, stream: str, partition: int, max_future: float | None, now: float
    ) -> None:
        """`now`: monotonic seconds (the bound's slack grows from then while the clock stands still)."""
        self._reader = RecordReader(query, max_future=max_future)
        self._stream, self._partition = stream, partition
        self.maxts: float | None = None
        """The largest valid timestamp re-keyed so far (None: none yet)."""
        self._moved_at = now

    def resume(self, maxts: float | None, now: float) -> None:
        """Continue from a committed or marked largest timestamp (None: none was committed)."""
        self.maxts, self._moved_at = maxts, now
        if maxts is not None:
            self._reader.resume({self._stream: maxts})

    def note(self, record: Any, kafka_ts: int, now: float) -> None:
        """Take one decoded source record: a valid one later than the clock moves it."""
        reader, stream = self._reader, self._stream
        try:  # once per re-keyed record: a `try` costs less than entering `contextlib.suppress`
            ts, _ = reader.read(
                stream, record, kafka_ts, reader.horizon(stream, (now - self._moved_at) * 1000)
            )
        except MalformedRecord:
            return
        reader.shown(stream, self._partition, ts)
        if self.maxts is None or ts > self.maxts:
            self.maxts, self._moved_at = ts, now
