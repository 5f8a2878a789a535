"""The per-group engine run inside Spark's Python workers: pandas batches in, results out. No Spark here.

Spark hands `GroupRunner.run` the rows of one task as an iterator of pandas batches, sorted by
(`grp`, `ts`, `input`, `partition`, `offset`); a task holds whole groups, one after the other. Each
group (one operator partition, or one time bucket of it; see `plan.py`) gets its own operator, built
by the same `OperatorFactory` as the joiner's and replay's and fed in timestamp order exactly as the
live joiner's engine for that partition is fed records that arrive in order: nothing is late, and
the engine, the ids and the output records are the shared ones. With `order: "auto"` an operator
re-plans as replay does (every 2,048 records, from its own statistics) and each group starts with
the task's latest plan; the order changes the work, never the results.

The operator partition of a group is `plan.group_of(grp)[0]`; a record keeps its own (source)
`partition` and `offset`: for a directly read input both are the operator partition, for a re-keyed
one the record is presented as the joiner's operator presents it, (input, source partition, source
offset), so rows windows count per source partition within the operator partition and result ids
name the source records (docs/partitioning.md).

Batches are streamed, never collected: a group's memory is its windows plus one batch, however long
its time range. The records come sorted, so the feed itself drives the watermark: after each chunk
(which ends between two timestamps) every input partition seen in the group is marked idle, so the
idle flush releases everything fed (docs/queries.md, "Quiet periods lose nothing") instead of
waiting for an input with no record in the group; the next chunk's first record makes them hold the
watermark again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pandas as pd

from streamjoin.backfill.codecs import input_codecs
from streamjoin.backfill.plan import BackfillPlan
from streamjoin.engine import MalformedRecord, RecordReader, Result, ResultFormatter
from streamjoin.operator import JoinOperator, OperatorFactory, QueryPlanner
from streamjoin.schema_registry import SchemaRegistry

__all__ = [
    "FEED_COLUMNS",
    "RESULT_COLUMNS",
    "STATS_COLUMNS",
    "GroupRunner",
    "ResultRow",
    "StageStats",
]

_ADVANCE_EVERY = 512
_UNREADABLE = "timestamp not readable by Spark as a number"
"""A record the engine accepts but Spark could not place in time (never expected): counted, not joined."""
_FRAME_ROWS = 10_000

FEED_COLUMNS = ("grp", "input", "partition", "offset", "ts", "kafka_ts", "value")
"""Columns the stage reads (`ts` is only the sort key; the exact timestamp is read from `value`)."""

RESULT_COLUMNS = ("id", "query", "ts", "partition", "key", "value")
"""Columns of a result row: id, query name, t_max, input partition number, Kafka key, output JSON bytes."""

STATS_COLUMNS = ("groups", "records", "malformed", "duplicates", "late", "results", "cpu_ms")
"""Columns of the statistics row a task returns when it writes its results itself."""

ResultRow = tuple[str, str, float, int, bytes | None, bytes]


@dataclass
class StageStats:
    """What one task did."""

    groups: int = 0
    records: int = 0
    malformed: int = 0
    duplicates: int = 0
    late: int = 0
    """Records the engine found late: never expected (the feed is sorted); counted if it happens."""
    results: int = 0
    cpu_ms: int = 0
    """CPU time of the task's Python worker (decoding batches, joining, formatting, writing)."""
    malformed_reasons: dict[str, int] = field(default_factory=dict)

    def as_row(self) -> tuple[int, ...]:
        """Return the statistics as a row of `STATS_COLUMNS`."""
        return (
            self.groups,
            self.records,
            self.malformed,
            self.duplicates,
            self.late,
            self.results,
            self.cpu_ms,
        )


class GroupRunner:
    """Run the shared engine over the sorted groups of one Spark task."""

    def __init__(
        self,
        plan: BackfillPlan,
        *,
        registry_url: str | None = None,
        registry: SchemaRegistry | None = None,
    ) -> None:
        """Run `plan`'s groups; Avro inputs read their schemas from `registry`, else from the
        registry at `registry_url` (one client and schema cache per process: `registry_at`)."""
        self.plan = plan
        self.query = plan.query
        self._names = self.query.stream_names
        self._reader = RecordReader(self.query)
        self._formatter = ResultFormatter(self.query)
        # Each input's (decode, piece): the engine's JSON reader, or the joiner's Avro decoder.
        self._codecs = input_codecs(self.query, self._reader, self._formatter, registry, registry_url)
        self._factory = OperatorFactory(self.query)
        self.stats = StageStats()
        # The output record, byte for byte as the live joiner writes it: without `select`, each
        # component is spliced in as the raw bytes it arrived as (`ResultFormatter.splicer`, as the
        # joiner does).
        self._splice = not self.query.projects
        self._spliced_record = self._formatter.splicer()  # reads `Entry.extra`, set on `add`

    @property
    def planner(self) -> QueryPlanner:
        """Return the planner the task's operators share (with `order: "auto"` it re-plans)."""
        return self._factory.planner

    def run(self, batches: Iterable[pd.DataFrame]) -> Iterator[list[ResultRow]]:
        """Join every group of `batches`; yield its owned results as rows, a few hundred at a time."""
        operator: JoinOperator | None = None
        group = -1
        partition = 0
        sources: set[tuple[str, int]] = set()  # (input, source partition) seen in the group
        previous: tuple[int, int, int] | None = None
        since_advance = 0
        fed_ts: object = None  # the sort timestamp of the last record fed
        names, codecs = self._names, self._codecs
        horizon, shown = self._reader.horizon, self._reader.shown  # far-future records: as in the joiner
        for batch in batches:
            columns = [
                batch[name].tolist()
                for name in ("grp", "input", "partition", "offset", "ts", "kafka_ts", "value")
            ]
            for grp, index, part, offset, sort_ts, kafka_ts, value in zip(*columns, strict=True):
                if grp != group or operator is None:
                    if operator is not None:
                        yield self._rows(group, partition, self._drain(operator, sources, final=True))
                    group, previous, since_advance = grp, None, 0
                    partition = self.plan.group_of(int(grp))[0]
                    operator = self._new_operator(partition)
                    sources = {(name, partition) for name in names}
                if since_advance >= _ADVANCE_EVERY and sort_ts != fed_ts:
                    # Between two timestamps: the drain's idle flush releases the newest one whole
                    # and closes the watermark there, so no record at it may follow.
                    since_advance = 0
                    yield self._rows(group, partition, self._drain(operator, sources, final=False))
                fed_ts = sort_ts
                identity = (index, part, offset)
                if identity == previous:  # the same record archived twice: never join it twice
                    self.stats.duplicates += 1
                    continue
                previous = identity
                self.stats.records += 1
                stream = names[index]
                decode, piece_of = codecs[index]
                kts = None if kafka_ts is None or kafka_ts != kafka_ts else int(kafka_ts)  # None or NaN
                try:
                    ts, decoded = decode(stream, value, kts, horizon(stream))
                except MalformedRecord as exc:
                    self._malformed(str(exc))
                    continue
                shown(stream, int(part), ts)
                if sort_ts is None or sort_ts != sort_ts:  # fed unsorted, first: it must not join
                    self._malformed(_UNREADABLE)
                    continue
                position, source = int(offset), int(part)
                sources.add((stream, source))
                piece = piece_of(index, source, position, value, decoded) if self._splice else None
                accepted = operator.add(
                    stream, decoded, ts=ts, partition=source, offset=position, size=len(value), extra=piece
                )
                self.stats.late += not accepted
                since_advance += 1
        if operator is not None:
            yield self._rows(group, partition, self._drain(operator, sources, final=True))

    def frames(self, batches: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """Join every group of `batches`; yield the results as pandas frames of `RESULT_COLUMNS`."""
        pending: list[ResultRow] = []
        for rows in self.run(batches):
            pending.extend(rows)
            if len(pending) >= _FRAME_ROWS:
                yield results_frame(pending)
                pending = []
        if pending:
            yield results_frame(pending)

    def _new_operator(self, partition: int) -> JoinOperator:
        self.stats.groups += 1
        operator = self._factory.build(partition)
        for stream in self._names:
            operator.engine.set_idle(stream, partition)
        return operator

    def _drain(self, operator: JoinOperator, sources: set[tuple[str, int]], *, final: bool) -> list[Result]:
        results = operator.finish() if final else operator.advance()
        for stream, source in sources:
            operator.engine.set_idle(stream, source)
        return results

    def _rows(self, group: int, partition: int, results: list[Result]) -> list[ResultRow]:
        rows: list[ResultRow] = []
        owns = self.plan.owns
        name = self.query.name
        encode = self._spliced if self._splice else self._formatted
        for result in results:
            t_max = max(e.ts for e in result)
            if owns(group, t_max):
                rid, body = encode(result, t_max)
                rows.append((rid, name, float(t_max), partition, self._formatter.key(result), body))
        self.stats.results += len(rows)
        return rows

    def _spliced(self, result: Result, t_max: float) -> tuple[str, bytes]:
        """Return (id, output record) with the components' raw bytes spliced in."""
        return self._formatter.result_id(result), self._spliced_record(result)

    def _formatted(self, result: Result, t_max: float) -> tuple[str, bytes]:
        """Return (id, output record) with the `select`ed fields, JSON-encoded."""
        value = self._formatter.value(result)
        return value["id"], json.dumps(value, separators=(",", ":")).encode()

    def _malformed(self, reason: str) -> None:
        self.stats.malformed += 1
        short = reason.split(":", 1)[0]
        self.stats.malformed_reasons[short] = self.stats.malformed_reasons.get(short, 0) + 1


def results_frame(rows: list[ResultRow]) -> pd.DataFrame:
    """Return result rows as a pandas frame of `RESULT_COLUMNS`."""
    return pd.DataFrame.from_records(rows, columns=list(RESULT_COLUMNS))
