"""Rebuild an operator's lost state from its marker and the input topics (docs/registry.md).

`recover` runs right after `claim`. When `positions.decide` says the state was lost (Redis restarted
empty or flushed: no checkpoint, but a marker of this query's incarnation), rolled back (behind the
marker) or unusable (positioned, but without the engine's scalars), it:

1. reads back, from the input topics, exactly the records the marker's entries held (the window and
   reorder-buffer contents at the marker's batch): per topic the offsets from the oldest entry to
   the newest one, bounded by the state the marker describes, never by a time guess;
2. restores a fresh engine from those entries and the marker's scalars (`MultiJoin.restore`, the
   same path as a Redis checkpoint), so watermark, reorder buffer and lazy batches are as they were;
3. reads each output partition from the marker's output offset to its end and keeps the ids of
   what this (query, partition) published after the marker (`PublishedIds`);
4. writes the marker again with those ids (`Marker.skip_results`, `skip_dead`), then commits batch 1
   of the new state (the entries, the marker's offsets, scalars and counters, the outputs' ends as
   `output_start`), so the operator continues from the marker's offsets.

Results of the batches after the marker are then produced again; `PublishedIds.filter` drops the
ones already published before they reach the outbox. The ids travel in the markers until every one
was produced again: an operator that resumes from the rebuilt checkpoint (its worker restarted it, or
another worker took the partition) takes them from the marker.

A state that must be rebuilt and that no marker can rebuild (an unusable checkpoint with no marker
of this incarnation, or a marker without the engine's scalars) raises `RebuildError` naming why: the
operator reports it and retries, publishing nothing from a state it cannot restore.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from streamjoin.engine.checkpoint import missing_scalars
from streamjoin.engine.entry import Entry
from streamjoin.joiner.batch.builder import BatchBuilder
from streamjoin.joiner.publish.outbox import HEADER_SEQ, OutboxRecord, parse_sequence_header
from streamjoin.joiner.recovery.positions import Marker, PositionKeeper, decide
from streamjoin.joiner.recovery.published import PublishedIds, dead_letter_id, result_id
from streamjoin.kafka import Consumer, TopicPartition, end_offsets, reader, start_consumer
from streamjoin.state.base import Checkpoint, CommitBatch, OutboxState, Trim
from streamjoin.state.redis.codec import raw_key, unpack_entry

__all__ = ["RebuildError", "recover"]

_log = logging.getLogger(__name__)
_READ_TIMEOUT_S = 60.0
_CLOCK_SKEW_S = 60.0


class RebuildError(RuntimeError):
    """The lost state cannot be rebuilt (its input records are no longer retained, or neither the
    checkpoint nor a marker holds the engine's scalars)."""


async def recover(keeper: PositionKeeper, builder: BatchBuilder, checkpoint: Checkpoint) -> None:
    """Rebuild the state if Redis lost it or rolled it back (see the module docstring): commit it and
    turn `checkpoint` into it (the operator then restores its engine from it as from any checkpoint),
    and set `keeper.skip`. Change nothing for a new query or a checkpoint at or past the marker, but
    take what a rebuild by another operator left to skip from the marker."""
    q, p, store, outputs = keeper.query, keeper.partition, keeper.store, keeper.outputs
    await keeper.settle()
    marker = await keeper.log.marker(q, p)
    lacking = missing_scalars(checkpoint.scalars)
    decision = decide(checkpoint.positioned, checkpoint.offsets, marker, keeper.incarnation, lacking=lacking)
    if decision.action == "fail":
        raise RebuildError(f"{q}[{p}]: {decision.reason}")
    if decision.action != "rebuild" or marker is None:
        if decision.action == "resume" and keeper.skip is None:
            keeper.skip = _left_to_skip(marker, keeper.incarnation)
        return
    started = time.monotonic()
    _log.warning("%s[%d]: %s; rebuilding from the input topics", q, p, decision.reason)
    consumer = reader(
        keeper.log.kafka.bootstrap, options=keeper.log.kafka.aiokafka, client_id=f"rebuild-{q}-{p}"
    )
    await start_consumer(consumer)
    try:
        entries, raws, reread = await _read_entries(consumer, marker, builder.input_topics, p)
        published = PublishedIds()
        outs = {n: TopicPartition(*outputs.partition(n, p)) for n in ("results", "dead")}
        # From a fetch response even on Apache Kafka: a rebuild is rare, and two of four rebuilds of a
        # rolled-back state hung once with the listing alone (not understood yet; the fetch is how it
        # always ran).
        ends = await end_offsets(consumer, list(outs.values()), exact=False)
        prefix = builder.output_prefix()
        for name, tp in outs.items():
            start = await _tail_start(consumer, tp, marker.outputs.get(name, 0), marker.at, ends[tp])
            exclusive = outputs.exclusive(name)
            await _read_published(consumer, tp, start, ends[tp], q, p, name, exclusive, prefix, published)
    finally:
        await consumer.stop()
    # What an earlier rebuild left to skip (Redis lost again before all of it was produced again).
    published.results |= set(marker.skip_results)
    published.dead |= set(marker.skip_dead)
    # Before the commits, in the marker too: if one applies, whoever resumes from the rebuilt state
    # (this operator's next attempt, an operator restarted by its worker, another worker) finds no
    # state to rebuild and must still skip what was published after the marker.
    if published:
        skipping = replace(marker, skip_results=sorted(published.results), skip_dead=sorted(published.dead))
        await keeper.log.write(q, p, skipping)
    keeper.skip = published if published else None
    counters = dict(marker.counters)
    sources = _filter_at(marker, checkpoint)
    if checkpoint.positioned:  # rolled back or unusable: first release what it holds, drop its outbox
        checkpoint.batch += 1
        await store.commit(q, p, checkpoint.epoch, _release_all(checkpoint, marker, builder.input_topics))
        counters = {k: v - checkpoint.counters.get(k, 0) for k, v in counters.items()}
    checkpoint.batch += 1
    await store.commit(
        q,
        p,
        checkpoint.epoch,
        CommitBatch(
            batch=checkpoint.batch,
            offsets=dict(marker.offsets),
            scalars=marker.scalars,
            added=[
                (e, raws[raw_key(e.input, None if e.partition == p else e.partition, e.offset)])
                for e in entries
            ],
            counters=counters,
            output_start={n: ends[tp] for n, tp in outs.items()},
            topics=builder.input_topics,
            sources=sources,
        ),
    )
    checkpoint.offsets = dict(marker.offsets)
    checkpoint.scalars = marker.scalars
    checkpoint.entries = entries
    checkpoint.raws = raws
    checkpoint.counters = dict(marker.counters)
    checkpoint.sources = sources
    checkpoint.output_start = {n: ends[tp] for n, tp in outs.items()}
    checkpoint.outboxes = {
        n: OutboxState(b.seq, b.seq, b.acked_offset) for n, b in checkpoint.outboxes.items()
    }
    _log.warning(
        "%s[%d]: rebuilt %d entries from batch %d of the marker in %.2f s (%d input records re-read); "
        "%d records published after the marker will not be published again",
        q, p, len(entries), marker.batch, time.monotonic() - started, reread, len(published),
    )  # fmt: skip


def _left_to_skip(marker: Marker | None, incarnation: str) -> PublishedIds | None:
    """Return what the marker says a state rebuilt by another operator (before a restart, on another
    worker) must still not publish again. Ids that committed batches dropped already are never
    produced again (an id names its members): taking them back is harmless. A marker of another
    incarnation is not ours (its ids could name results of this one)."""
    if marker is None or marker.incarnation != incarnation:
        return None
    return marker.skipped() or None


def _filter_at(marker: Marker, checkpoint: Checkpoint) -> dict[str, int]:
    """Return the duplicate filter of re-keyed inputs (`CommitBatch.sources`) at the marker. A source
    partition that only the checkpoint has (an unusable one, ahead of the marker) is reset to -1
    (nothing taken): committing the marker's alone would leave it ahead, and the records read again
    after the marker would be dropped as duplicates.

    >>> m = Marker("1.0:1", 3, {}, {}, None, {}, {}, sources={"a:0": 7})
    >>> _filter_at(m, Checkpoint(1, 5, {"t": 9}, None, [], {}, {}, {}, sources={"a:0": 9, "a:1": 4}))
    {'a:0': 7, 'a:1': -1}
    """
    return {**dict.fromkeys(checkpoint.sources, -1), **marker.sources}


def _release_all(checkpoint: Checkpoint, marker: Marker, topics: tuple[str, ...]) -> CommitBatch:
    """Return the commit that empties a rolled-back (or unusable) state: every entry released, every
    outbox record counted as published (what it would publish again was produced from older offsets).
    It stores the marker's scalars, which the next commit stores anyway: a complete set even when the
    checkpoint's were lost, so no state in Redis ever has scalars no engine can restore."""
    trims = [Trim(n, b.seq, b.acked_offset) for n, b in checkpoint.outboxes.items() if b.seq > b.acked]
    return CommitBatch(
        batch=checkpoint.batch,
        offsets=dict(checkpoint.offsets),
        scalars=marker.scalars,
        expired=list(checkpoint.entries),
        trims=trims,
        topics=topics,
    )


async def _tail_start(consumer: Consumer, tp: TopicPartition, start: int, at: float, end: int) -> int:
    """Return where to read what was published after a marker made at `at`: its output offset, or
    later when the partition's time index says so. The offset alone can be far back on a partition
    other queries share (a dead-letter topic this operator has not written to for a long time);
    nothing produced after the marker can be older than it, less `_CLOCK_SKEW_S` between workers."""
    if at <= 0 or start >= end:
        return start
    found = await consumer.offsets_for_times({tp: int((at - _CLOCK_SKEW_S) * 1000)})
    hit = found.get(tp)
    return max(start, hit.offset if hit is not None else end)


async def _read_entries(
    consumer: Consumer, marker: Marker, topics: tuple[str, ...], partition: int
) -> tuple[list[Entry], dict[tuple[int, ...], bytes], int]:
    """Return the marker's entries with their record bytes read from the input topics, and how many
    records were read for them."""
    wanted: dict[tuple[str, int], set[int]] = {}
    for input_index, offset, _, source in marker.entries:  # a re-keyed input's: its source partition
        wanted.setdefault((topics[input_index], partition if source < 0 else source), set()).add(offset)
    found: dict[tuple[str, int], dict[int, bytes]] = {}
    reread = 0
    for (topic, part), offsets in wanted.items():
        tp = TopicPartition(topic, part)
        first, last = min(offsets), max(offsets)
        begin = (await consumer.beginning_offsets([tp]))[tp]
        if begin > first:
            raise RebuildError(
                f"{topic}[{part}] starts at offset {begin}: the records from {first} the lost "
                "state held are no longer retained"
            )
        consumer.assign([tp])
        consumer.seek(tp, first)
        got: dict[int, bytes] = {}
        deadline = time.monotonic() + _READ_TIMEOUT_S
        while await consumer.position(tp) <= last:
            if time.monotonic() > deadline:
                raise TimeoutError(f"re-reading {topic}[{part}] took over {_READ_TIMEOUT_S:g} s")
            batch = await consumer.getmany(tp, timeout_ms=500, max_records=10_000)
            for m in batch.get(tp, ()):
                if m.offset <= last:
                    reread += 1
                    if m.offset in offsets and m.value is not None:
                        got[m.offset] = m.value
        found[(topic, part)] = got
    entries: list[Entry] = []
    raws: dict[tuple[int, ...], bytes] = {}
    for input_index, offset, header, source in marker.entries:
        part = partition if source < 0 else source
        raw = found[(topics[input_index], part)].get(offset)
        if raw is None:
            raise RebuildError(f"record {offset} of {topics[input_index]}[{part}] is gone")
        entries.append(unpack_entry(f"{input_index}:{offset}", part, header.encode(), raw))
        raws[raw_key(input_index, None if source < 0 else source, offset)] = raw
    return entries, raws, reread


async def _read_published(
    consumer: Consumer,
    tp: TopicPartition,
    start: int,
    end: int,
    query: str,
    partition: int,
    name: str,
    exclusive: bool,
    value_prefix: bytes,
    into: PublishedIds,
) -> None:
    """Add to `into` what (query, partition) published to `tp` in [start, end)."""
    if start >= end:
        return
    consumer.assign([tp])
    consumer.seek(tp, start)
    ours = query.encode()
    deadline = time.monotonic() + _READ_TIMEOUT_S
    while await consumer.position(tp) < end:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"reading the tail of {tp.topic}[{tp.partition}] took over {_READ_TIMEOUT_S:g} s"
            )
        batch = await consumer.getmany(tp, timeout_ms=500, max_records=10_000)
        for m in batch.get(tp, ()):
            if m.offset >= end or m.value is None:
                continue
            origin = next((parse_sequence_header(v) for n, v in m.headers or () if n == HEADER_SEQ), None)
            if origin is not None:
                mine = origin[:2] == (ours, partition)
            else:  # unmarked: only on a results partition this operator alone writes
                mine = exclusive and m.value.startswith(value_prefix)
            if not mine:
                continue
            record = OutboxRecord(m.key, m.value, tuple(m.headers or ()))
            if name == "results":
                rid = result_id(record)
                if rid is not None:
                    into.results.add(rid)
            else:
                did = dead_letter_id(record)
                if did is not None:
                    into.dead.add(did)
