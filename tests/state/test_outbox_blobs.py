"""The outboxes against the real embedded Redis: one blob per batch, trimmed by whole blobs.

Whatever was committed and not trimmed comes back from `claim` as the records `acked + 1 .. seq`,
in order, when batches are trimmed at blob boundaries, inside a blob, or not at all, whether a batch's
results were packed as records or as columns (`ResultRecords`); and an outbox written one record per
element (before blobs) reads and trims the same, with new batches after it.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Sequence

from streamjoin.state.base import CommitBatch, Trim
from streamjoin.state.outbox import OutboxRecord, ResultRecords, encode_record
from streamjoin.state.redis import RedisStateStore
from streamjoin.state.redis.connect import connect

QUERY = "q"
P = 1


def _record(seq: int, outbox: str) -> OutboxRecord:
    if outbox == "dead":
        return OutboxRecord(b"k%d" % seq, b"bad-%d" % seq, (("reason", b"r%d" % seq), ("stream", b"s")))
    return OutboxRecord(None if seq % 2 else b'"%d"' % seq, b'{"n":%d}' % seq)


def test_claim_returns_exactly_the_untrimmed_records_in_order(redis_server: str) -> None:
    rng = random.Random(7)

    async def run() -> None:
        store = RedisStateStore(redis_server, prefix=f"ob{uuid.uuid4().hex[:8]}:")
        try:
            epoch = (await store.claim(QUERY, P, "w", ["t"])).epoch
            seq = {"results": 0, "dead": 0}
            acked = dict(seq)
            for batch in range(1, 40):
                outbox: dict[str, Sequence[OutboxRecord]] = {}
                for name in seq:
                    n = rng.choice([0, 1, 3, 50])
                    records = [_record(seq[name] + i + 1, name) for i in range(n)]
                    if name == "results" and records and rng.random() < 0.5:  # the joiner's columns
                        keys, values = [r.key for r in records], [r.value for r in records]
                        outbox[name] = ResultRecords(keys, values)
                        assert outbox[name] == records
                    else:
                        outbox[name] = records
                    seq[name] += n
                trims = []
                for name in seq:  # acknowledge up to any record committed so far, often mid-blob
                    if rng.random() < 0.5 and seq[name] > acked[name]:
                        acked[name] = rng.randint(acked[name] + 1, seq[name])
                        trims.append(Trim(name, acked[name], 100 + acked[name]))
                await store.commit(
                    QUERY, P, epoch, CommitBatch(batch=batch, offsets={"t": batch}, scalars={},
                                                 outbox=outbox, trims=trims)
                )  # fmt: skip
                if batch % 5 == 0:
                    checkpoint = await store.claim(QUERY, P, "w", ["t"])
                    epoch = checkpoint.epoch
                    for name, box in checkpoint.outboxes.items():
                        assert (box.seq, box.acked) == (seq[name], acked[name])
                        want = [_record(s, name) for s in range(acked[name] + 1, seq[name] + 1)]
                        assert box.pending == want, (batch, name)
            # Trimming everything leaves empty lists: every blob went.
            await store.trim(QUERY, P, epoch, [Trim(n, seq[n], 999) for n in seq])
            r = connect(redis_server)
            try:
                k = store.keys(QUERY, P)
                assert [await r.llen(k.outbox(n)) for n in seq] == [0, 0]
            finally:
                await r.aclose()
            assert all(not b.pending for b in (await store.claim(QUERY, P, "w", ["t"])).outboxes.values())
        finally:
            await store.aclose()

    asyncio.run(run())


def test_an_outbox_of_one_record_per_element_reads_and_trims_after_the_upgrade(redis_server: str) -> None:
    async def run() -> None:
        store = RedisStateStore(redis_server, prefix=f"ob{uuid.uuid4().hex[:8]}:")
        r = connect(redis_server)
        try:
            await store.claim(QUERY, P, "w", ["t"])
            k = store.keys(QUERY, P)
            # What the older store left: records 3..7 pending (1..2 trimmed), one element each.
            await r.rpush(k.outbox("results"), *[encode_record(_record(s, "results")) for s in range(3, 8)])
            await r.hset(k.meta, mapping={"results:seq": 7, "results:acked": 2, "results:acked_offset": 41})
            checkpoint = await store.claim(QUERY, P, "w", ["t"])
            assert checkpoint.outboxes["results"].pending == [_record(s, "results") for s in range(3, 8)]
            epoch = checkpoint.epoch
            await store.commit(
                QUERY, P, epoch,
                CommitBatch(batch=1, offsets={"t": 1}, scalars={},
                            outbox={"results": [_record(s, "results") for s in range(8, 12)]},
                            trims=[Trim("results", 4, 43)]),
            )  # fmt: skip
            assert await r.llen(k.outbox("results")) == 3 + 1  # records 5, 6, 7 and the new blob
            checkpoint = await store.claim(QUERY, P, "w", ["t"])
            assert checkpoint.outboxes["results"].pending == [_record(s, "results") for s in range(5, 12)]
            await store.trim(QUERY, P, checkpoint.epoch, [Trim("results", 9, 48)])
            assert await r.llen(k.outbox("results")) == 1  # the blob, published in part
            box = (await store.claim(QUERY, P, "w", ["t"])).outboxes["results"]
            assert (box.acked, box.acked_offset) == (9, 48)
            assert box.pending == [_record(s, "results") for s in (10, 11)]
        finally:
            await store.aclose()
            await r.aclose()

    asyncio.run(run())
