"""One batch of an operator: decode the records, feed the engine, and build the atomic commit.

Pure apart from the clock: no Kafka, no Redis. `BatchBuilder` keeps the per-operator pieces that
outlive a batch (reader, formatter, the stream names of each topic, counters).

Nothing a producer writes stops the partition: a malformed record, one whose timestamp is out of
range or too far ahead of what its input has shown (`max_future`), and a result or dead letter larger
than the output topic takes (`max_record_bytes`) all become dead letters, with their reason, in the
commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

from streamjoin.engine import MalformedRecord, RecordReader, ResultFormatter
from streamjoin.engine.entry import Entry
from streamjoin.engine.fastjson import loads_json
from streamjoin.engine.ingest import DEFAULT_MAX_FUTURE
from streamjoin.engine.schedule import EmitterRun
from streamjoin.joiner.batch.formats import input_codecs, output_encoder
from streamjoin.joiner.publish.outbox import OutboxRecord
from streamjoin.joiner.rekeyed.reader import RekeyedReader
from streamjoin.kafka import ConsumedRecord
from streamjoin.operator import JoinOperator
from streamjoin.query.model import QueryDef, RangeWindow
from streamjoin.schema_registry import SchemaRegistry
from streamjoin.state.base import CommitBatch, Trim
from streamjoin.state.outbox import ResultRecords, largest_value

__all__ = ["DEFAULT_MAX_RECORD_BYTES", "NEWEST_SCALAR", "BatchBuilder", "BuiltBatch", "Message"]

DEFAULT_MAX_RECORD_BYTES = 1_000_000
"""The largest output record (key + value + headers) an operator publishes: under the broker's
default `message.max.bytes` (1,048,588) with room for the batch framing; the setting overrides it."""


NEWEST_SCALAR = "input_newest"
"""The checkpoint scalar holding each input's newest timestamp (`RecordReader.newest_by_input`): a
restarted operator measures `max_future` from it, not from nothing (a far-ahead record read first
would otherwise be accepted and move its partition's clock past every later record)."""

Message = ConsumedRecord
"""What the builder needs of a consumed Kafka record (`streamjoin.kafka.ConsumedRecord`)."""


@dataclass(slots=True)
class BuiltBatch:
    """A commit and what it means: results and dead letters to publish, and counts."""

    commit: CommitBatch
    results: Sequence[OutboxRecord]
    dead: list[OutboxRecord]
    records: int
    newest_kafka_ms: float | None
    malformed: dict[str, int] = field(default_factory=dict)
    late: int = 0


class BatchBuilder:
    """Turn consumed records of one (query, partition) into a `CommitBatch`."""

    def __init__(
        self,
        query: QueryDef,
        partition: int,
        dead_letter_topic: str,
        *,
        max_future: float | None = DEFAULT_MAX_FUTURE,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        internal_topics: Mapping[str, str] | None = None,
        schemas: SchemaRegistry | None = None,
    ) -> None:
        """`internal_topics`: the internal topic each re-keyed input is read from (by stream)."""
        self.query = query
        self.partition = partition
        self._reader = RecordReader(query, max_future=max_future)
        self._max_bytes = max_record_bytes
        # Per input, (its newest timestamp, the wall time that was first seen): while an input's
        # newest timestamp stands still, its horizon grows with wall time (read as ms), so a
        # producer pausing longer than `max_future` does not see its later records refused for good.
        self._newest: dict[str, tuple[float | None, float]] = {}
        # Probes + comparisons of the current engine already counted in a batch: each batch commits
        # the work it did with the records it read, so the observed cost per record survives a new
        # attempt's fresh engine (docs/api.md, "Control Tables").
        self._work_seen = 0
        self._formatter = ResultFormatter(query)
        self._dead_topic = dead_letter_topic
        self.streams_of: dict[str, list[tuple[str, int]]] = {}
        self.input_topics = tuple(inp.topic for inp in query.inputs)
        """The topic of each input (`CommitBatch.topics`; a re-keyed input's too: its records keep
        their source partition and offset, so they share the window table of its topic)."""
        internal = internal_topics or {}
        for i, inp in enumerate(query.inputs):
            self.streams_of.setdefault(internal.get(inp.stream, inp.topic), []).append((inp.stream, i))
        self.direct_streams_of = {t: s for t, s in self.streams_of.items() if t not in internal.values()}
        """`streams_of` without the internal topics (their idle source partitions are the reader's)."""
        self.rekeyed: RekeyedReader | None = None
        """The reader of the re-keyed inputs' internal topics (None: every input is read directly)."""
        key_ref = query.first_join_field
        self._key_input = query.input_index(key_ref.stream) if key_ref is not None else None
        self._splice = not query.projects
        # Every entry's `extra` is its `ResultFormatter.piece`: raw bytes, spliced pieces, output key.
        self._spliced_records = self._formatter.batch_splicer().records
        self._has_rows = any(not isinstance(i.window, RangeWindow) for i in query.inputs)
        # Formats (joiner/batch/formats.py), chosen once: each topic's (decode, piece), the output's encoder.
        json_codec = (self._decode, self._formatter.piece)
        self._codecs = input_codecs(query, json_codec, self._reader, self._formatter, schemas)
        for stream, topic in internal.items():  # a re-keyed input's records keep their source's format
            if (source := query.inputs[query.input_index(stream)].topic) in self._codecs:
                self._codecs[topic] = self._codecs[source]
        envelope = self._splice_results if self._splice else self._encode_results
        self._encode_output = output_encoder(query, self._formatter, envelope, schemas)

    def output_prefix(self) -> bytes:
        """Return how every output record starts (registers an Avro output's schema first)."""
        return self._encode_output.prefix()

    def reset(
        self,
        entries: Iterable[Entry],
        raws: Mapping[tuple[int, ...], bytes],
        scalars: Mapping[str, Any] | None = None,
    ) -> None:
        """Attach their pieces to a checkpoint's entries (`raws`: their raw bytes by (input, offset),
        or (input, offset, source partition) for a re-keyed input's record of another partition),
        and bound the next records by the newest timestamps its `scalars` hold (`NEWEST_SCALAR`)."""
        self._work_seen = 0  # a new attempt: a fresh engine, nothing counted yet
        self._reader.resume((scalars or {}).get(NEWEST_SCALAR, {}))
        piece, p = self._formatter.piece, self.partition
        for e in entries:
            at = (e.input, e.offset) if e.partition == p else (e.input, e.offset, e.partition)
            e.extra = piece(e.input, e.partition, e.offset, raws[at], e.record)

    @property
    def topics(self) -> list[str]:
        """Return the distinct input topics, in query order."""
        return list(self.streams_of)

    def build(
        self,
        engine: JoinOperator,
        messages: Mapping[Any, Iterable[Message]],
        *,
        batch: int,
        offsets: dict[str, int],
        trims: list[Trim],
        last_arrival: dict[str, float],
        now: float,
    ) -> BuiltBatch:
        """Feed `messages` (by topic-partition) to `engine` (journaled), advance it, return the commit.

        `offsets` (next offset per topic) and `last_arrival` (wall time per stream) are updated.
        """
        dead: list[OutboxRecord] = []
        malformed: dict[str, int] = {}
        late = count = 0
        newest: float | None = None
        add = engine.engine.add  # each record is counted for the planner per input below (`observe`)
        rekeyed = self.rekeyed
        if rekeyed is not None:
            messages = rekeyed.translate(messages, now)
        codecs, json_codec = self._codecs, (self._decode, self._formatter.piece)
        slack = self._slack(now)
        horizon_of, shown = self._reader.horizon, self._reader.shown
        for tp, msgs in messages.items():
            streams = self.streams_of.get(tp.topic, ())
            p = tp.partition  # the operator's, or a re-keyed record's source partition (`SourceGroup`)
            decode, piece = codecs.get(tp.topic, json_codec)
            # Each input's decoded records and timestamps, counted for the planner at once below.
            seen: list[tuple[str, int, list[dict[str, Any]], list[float]]] = [
                (stream, index, [], []) for stream, index in streams
            ]
            targets = [(stream, index, kept.append, times.append) for stream, index, kept, times in seen]
            last = None
            for m in msgs:
                last = m
                value = m.value
                for stream, index, keep, keep_ts in targets:
                    try:
                        ts, record = decode(stream, value, m.timestamp, horizon_of(stream, slack[stream]))
                    except MalformedRecord as exc:
                        malformed[stream] = malformed.get(stream, 0) + 1
                        dead.append(self._dead_letter(m, stream, str(exc)))
                        continue
                    keep(record)
                    keep_ts(ts)
                    shown(stream, p, ts)
                    raw: bytes = value  # type: ignore[assignment]  # decoded, so not None
                    offset = m.offset
                    extra = piece(index, p, offset, raw, record)
                    if not add(stream, record, ts=ts, partition=p, offset=offset, size=len(raw), extra=extra):
                        late += 1
            for stream, _, kept, times in seen:
                engine.observe(stream, kept, times)
            if last is not None:
                count += len(msgs)  # type: ignore[arg-type]  # aiokafka hands lists
                offsets[tp.topic] = last.offset + 1
                for stream, _ in streams:
                    last_arrival[stream] = now
                if newest is None or last.timestamp > newest:
                    newest = last.timestamp
        sources = rekeyed.finish(offsets) if rekeyed is not None else {}
        results = engine.advance()
        work = sum(s.probes + s.comparisons for s in engine.stats.values())
        delta = engine.take_delta()
        # An entry is one object from arrival to expiry, so identity tells entries apart.
        expired_now = set(delta.expired)
        added_now = set(delta.added)
        added = [(e, e.extra[2]) for e in delta.added if e not in expired_now]  # extra[2]: raw bytes
        released = [e for e in delta.released if e not in added_now]
        expired = [e for e in delta.expired if e not in added_now]
        # An entry added now is stored with its header as it is at the commit; one deleted, not at all.
        rewritten = [e for e in delta.rewritten if e not in added_now and e not in expired_now]
        records = self._encode_output(results, dead, engine.result_runs)
        if records and largest_value(records) > self._max_bytes - _KEY_MARGIN:
            records = self._fit(records, results, dead)
        dead = [self._fit_dead(d) for d in dead]
        counters = {"records_in": count, "results": len(records), "late": late, "dead": len(dead)}
        counters |= {"observed_work": work - self._work_seen, "observed_records": count}
        self._work_seen = work
        for stream, n in malformed.items():
            counters[f"malformed:{stream}"] = n
        scalars = delta.scalars
        scalars[NEWEST_SCALAR] = self._reader.newest_by_input()
        commit = CommitBatch(
            batch=batch,
            offsets=dict(offsets),
            scalars=scalars,
            added=added,
            released=released,
            expired=expired,
            rewritten=rewritten,
            outbox={"results": records, "dead": dead},
            counters=counters,
            trims=list(trims),
            topics=self.input_topics,
            sources=sources,
        )
        return BuiltBatch(commit, records, dead, count, newest, malformed, late)

    def _slack(self, now: float) -> dict[str, float]:
        """Return, per input, the wall time (ms) since its newest timestamp last moved: how much
        further ahead than `max_future` its next record may be."""
        slack: dict[str, float] = {}
        for stream in self.query.stream_names:
            newest = self._reader.newest(stream)
            seen = self._newest.get(stream)
            if seen is None or seen[0] != newest:
                self._newest[stream] = seen = (newest, now)
            slack[stream] = max(0.0, (now - seen[1]) * 1000.0)
        return slack

    def _decode(
        self, stream: str, raw: bytes | None, kafka_ts: float, horizon: float
    ) -> tuple[float, dict[str, Any]]:
        """Decode as replay does (`loads_json`: orjson where it reads what the engine's reader
        reads, the reader for the rest: big integers exactly, `NaN` refused) and validate."""
        if raw is not None:
            return self._reader.read(stream, loads_json(raw), kafka_ts, horizon)
        return self._reader.decode(stream, raw, kafka_ts, horizon)

    def _fit(
        self, records: Sequence[OutboxRecord], results: list[Any], dead: list[OutboxRecord]
    ) -> list[OutboxRecord]:
        """Return `records` without those over `max_record_bytes`; each becomes a dead letter that
        refers to the result (its id, `ts` and size) instead of carrying it."""
        kept: list[OutboxRecord] = []
        for record, result in zip(records, results, strict=True):
            size = _size(record)
            if size <= self._max_bytes:
                kept.append(record)
                continue
            result_id = self._formatter.result_id(result)
            reason = f"result of {size} bytes is larger than max_record_bytes={self._max_bytes}"
            reference = {
                "query": self.query.name,
                "id": result_id,
                "ts": max(e.ts for e in result),
                "bytes": size,
            }
            headers = (
                ("reason", reason.encode()),
                ("query", self.query.name.encode()),
                ("result-id", result_id.encode()),
            )
            dead.append(OutboxRecord(record.key, json.dumps(reference).encode(), headers))
        return kept

    def _fit_dead(self, letter: OutboxRecord) -> OutboxRecord:
        """Return `letter`, or when it is over `max_record_bytes`, the letter without its value (its
        headers name the source record) and the reason extended."""
        size = _size(letter)
        if size <= self._max_bytes:
            return letter
        headers = tuple(
            (
                name,
                value + b"; value of %d bytes dropped (over max_record_bytes=%d)" % (size, self._max_bytes),
            )
            if name == "reason"
            else (name, value)
            for name, value in letter.headers
        )
        if _size(OutboxRecord(None, b"", headers)) > self._max_bytes:  # a reason cannot be that long
            headers = (("reason", b"dead letter too large"), *headers[1:])
        key = letter.key if letter.key is not None and len(letter.key) <= _KEY_MARGIN else None
        return OutboxRecord(key, b"", headers)

    def _splice_results(self, results: list[Any], runs: Sequence[EmitterRun]) -> ResultRecords:
        """Encode results by splicing their components' raw bytes (no JSON encoding of records).

        The value equals `ResultFormatter.value` (tests compare them); each entry's pieces and
        output key were computed once, when it arrived (`Entry.extra`); the share of a run of
        results that one entry emitted (`runs`) is written once. The records stay two columns
        (`ResultRecords`): no tuple per result.
        """
        values, key_input = self._spliced_records(results, runs), self._key_input
        if key_input is None:
            return ResultRecords([None] * len(values), values)
        keys = list(map(_key_of, map(_extra_of, map(itemgetter(key_input), results))))  # extra[3]: the key
        return ResultRecords(keys, values)

    def _encode_results(self, results: list[Any], runs: Sequence[EmitterRun]) -> list[OutboxRecord]:
        """Encode results with `select`ed fields (JSON-encoded, not spliced)."""
        fmt = self._formatter
        return [OutboxRecord(fmt.key(r), fmt.encode(r)) for r in results]

    def _dead_letter(self, m: Message, stream: str, reason: str) -> OutboxRecord:
        """Return the dead letter of `m`: its key and value as they arrived, the reason in headers."""
        headers = (
            ("reason", reason.encode()),
            ("query", self.query.name.encode()),
            ("stream", stream.encode()),
            ("source-topic", m.topic.encode()),
            ("source-partition", str(m.partition).encode()),
            ("source-offset", str(m.offset).encode()),
        )
        return OutboxRecord(m.key, m.value if m.value is not None else b"", headers)


_key_of = itemgetter(3)
_extra_of = attrgetter("extra")
_KEY_MARGIN = 4096
"""Keys and headers of results are small: a value within this margin of the limit is measured whole."""


def _size(record: OutboxRecord) -> int:
    """Return the bytes `record` takes against the broker's limit (key, value and headers)."""
    key, value, headers = record
    return len(value) + (len(key) if key is not None else 0) + sum(len(n) + len(v) for n, v in headers)
