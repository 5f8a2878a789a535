"""The tail of an operator's output partition: what recovery reads to find the last record it published.

The Kafka reads themselves go through `streamjoin.kafka` (consumers, start positions, end offsets).
"""

from __future__ import annotations

import time
from typing import Any

from streamjoin.joiner.publish.outbox import HEADER_SEQ, parse_sequence_header
from streamjoin.kafka import Consumer, TopicPartition, end_offsets

__all__ = ["fetch_evenly", "highest_published"]


async def highest_published(
    consumer: Consumer,
    tp: TopicPartition,
    *,
    query: str,
    partition: int,
    from_offset: int,
    acked: int,
    exact_ends: bool,
    unmarked_prefix: bytes | None = None,
    timeout_ms: int = 30_000,
) -> tuple[int, int]:
    """Return (highest sequence number published, its offset) of (query, partition) in `tp`.

    Reads `tp` from `from_offset` (where the records numbered after `acked` start) to its current
    end; (acked, -1) when none of those records is ours. With `unmarked_prefix` the partition is
    the operator's alone and only the last record of each publish carries `sj-seq`: a record
    without it whose value starts with the prefix (`{"query":<name>,`) is the one after the
    previous record of ours (an idempotent producer writes a partition in order, without gaps).
    """
    end = (await end_offsets(consumer, [tp], exact=exact_ends))[tp]
    best, best_offset = acked, -1
    if from_offset >= end:
        return best, best_offset
    consumer.seek(tp, max(from_offset, 0))
    ours = query.encode()
    deadline = time.monotonic() + timeout_ms / 1000
    while await consumer.position(tp) < end:
        if time.monotonic() > deadline:
            raise TimeoutError(f"reading the tail of {tp.topic}[{tp.partition}] took over {timeout_ms} ms")
        batch = await consumer.getmany(tp, timeout_ms=500, max_records=10_000)
        for message in batch.get(tp, ()):
            marked = False
            for name, value in message.headers or ():
                if name != HEADER_SEQ:
                    continue
                marked = True
                origin = parse_sequence_header(value)
                if origin is not None and origin[:2] == (ours, partition):
                    best, best_offset = origin[2], message.offset
            if (
                not marked
                and unmarked_prefix is not None
                and message.value is not None
                and message.value.startswith(unmarked_prefix)
            ):
                best, best_offset = best + 1, message.offset
    return best, best_offset


async def fetch_evenly(
    consumer: Consumer,
    tps: list[TopicPartition],
    max_records: int,
    poll_ms: int,
    fetched: dict[TopicPartition, list[Any]] | None = None,
) -> dict[TopicPartition, list[Any]]:
    """Take an equal share of `max_records` from every input partition, so the watermark moves evenly.

    aiokafka's `getmany` drains one partition's fetched records before the next one's; a join fed
    like that buffers one whole input before the others arrive. Waits up to `poll_ms` when nothing
    was fetched yet. `fetched`: records already taken for this batch (read while the previous
    commit was in flight), topped up to each partition's share with what arrived since.
    """
    share = max(max_records // len(tps), 1)
    data: dict[TopicPartition, list[Any]] = dict(fetched) if fetched else {}
    for tp in tps:
        have = data.get(tp, [])
        if len(have) >= share:
            continue
        more = (await consumer.getmany(tp, timeout_ms=0, max_records=share - len(have))).get(tp)
        if more:
            data[tp] = [*have, *more] if have else more
    if not data:
        data = await consumer.getmany(*tps, timeout_ms=poll_ms, max_records=share)
    return data
