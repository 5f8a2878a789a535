"""Progress markers: the decision after `claim` (new query, lost state, other incarnation), the marker's
form, what a keeper follows, and the filter of what was published after a marker."""

from __future__ import annotations

import asyncio
import json
import uuid
import zlib
from collections.abc import Callable

import pytest

from streamjoin.engine.checkpoint import REQUIRED_SCALARS
from streamjoin.engine.entry import Entry
from streamjoin.joiner.batch.builder import BuiltBatch
from streamjoin.joiner.publish.outbox import OutboxRecord
from streamjoin.joiner.publish.output_topics import OutputTopics
from streamjoin.joiner.recovery.positions import Marker, PositionKeeper, PositionLog, decide
from streamjoin.joiner.recovery.published import PublishedIds
from streamjoin.joiner.registry_follow.epoch import RegistryEpoch
from streamjoin.kafka import KafkaClients
from streamjoin.registry import RegistrySnapshot
from streamjoin.state.base import Checkpoint, CommitBatch, FencedError, OutboxState
from streamjoin.state.redis import RedisStateStore
from streamjoin.state.redis.codec import pack_entry

INC = "1700000000.5:1"


def _marker(**changes: object) -> Marker:
    base = {
        "incarnation": INC,
        "batch": 9,
        "offsets": {"a": 40, "b": 12},
        "outputs": {"results": 30, "dead": 2},
        "watermark": 100.0,
        "scalars": {**dict.fromkeys(REQUIRED_SCALARS, 0), "watermark": 100.0},
        "counters": {"records_in": 52},
        "entries": [(0, 38, "99|10|1|4", -1), (1, 11, "97|8|1|3", -1)],
    }
    base.update(changes)
    return Marker(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("positioned", "offsets", "marker", "incarnation", "action"),
    [
        (False, {}, None, INC, "new"),  # a query seen for the first time
        (False, {}, _marker(), INC, "rebuild"),  # Redis restarted empty: the marker says it ran
        (False, {}, _marker(), "1700000000.5:2", "new"),  # redefined (PUT): a marker of the old one
        (False, {}, _marker(), "1700000099.0:1", "new"),  # deleted and registered again
        (True, {"a": 40, "b": 12}, _marker(), INC, "resume"),  # the usual restart
        (True, {"a": 45, "b": 12}, _marker(), INC, "resume"),  # Redis ahead of a marker not yet written
        (True, {"a": 39, "b": 12}, _marker(), INC, "rebuild"),  # Redis rolled back behind the marker
        (True, {"a": 0}, _marker(), "other:1", "resume"),
        (True, {"a": 0}, None, INC, "resume"),
    ],
)
def test_decide(
    positioned: bool, offsets: dict[str, int], marker: Marker | None, incarnation: str, action: str
) -> None:
    assert decide(positioned, offsets, marker, incarnation).action == action


@pytest.mark.parametrize(
    ("positioned", "lacking", "marker", "action", "reason"),
    [
        # Redis kept offsets but lost the engine's scalars (or holds `{}`): rebuilt from the marker
        (True, ["next_seq"], _marker(), "rebuild", "checkpoint unusable: its scalars lack next_seq"),
        (True, list(REQUIRED_SCALARS), _marker(), "rebuild", "checkpoint unusable: its scalars lack"),
        # ... and with no marker of this incarnation to rebuild from: a clear error, never a resume
        (True, ["next_seq"], None, "fail", "no marker of this incarnation to rebuild it from"),
        (True, ["next_seq"], _marker(incarnation="other:1"), "fail", "no marker of this incarnation"),
        # a marker without the engine's scalars cannot rebuild lost state
        (False, [], _marker(scalars={}), "fail", "the marker lacks the scalars next_seq"),
        (True, ["next_seq"], _marker(scalars={"watermark": 1.0}), "fail", "the marker lacks the scalars"),
        # ... and is not needed by a checkpoint that is complete and at the marker
        (True, [], _marker(scalars={}), "resume", "checkpoint at or past the marker"),
        (False, ["next_seq"], None, "new", "no marker"),  # unpositioned: nothing to restore anyway
    ],
)
def test_decide_on_a_checkpoint_or_marker_without_the_engine_scalars(
    positioned: bool, lacking: list[str], marker: Marker | None, action: str, reason: str
) -> None:
    offsets = {"a": 40, "b": 12} if positioned else {}
    decision = decide(positioned, offsets, marker, INC, lacking=lacking)
    assert (decision.action, reason in decision.reason) == (action, True), decision.reason


def test_marker_round_trip_and_garbage() -> None:
    m = _marker(entries=[(i % 3, 1_000 + i, f"{i}|20|1|{i}", -1) for i in range(5_000)])
    raw = m.to_bytes()
    assert Marker.from_bytes(raw) == m
    rekeyed = _marker(entries=[(0, 38, "99|10|1|4", 3), (0, 38, "99|10|1|4", -1)], sources={"a:3": 38})
    assert Marker.from_bytes(rekeyed.to_bytes()) == rekeyed  # a re-keyed input's entry names its source
    rebuilt = _marker(skip_results=["t:0:1|u:0:2"], skip_dead=[("source", "t", "7", "a")])
    assert Marker.from_bytes(rebuilt.to_bytes()) == rebuilt
    assert rebuilt.skipped() == PublishedIds(results={"t:0:1|u:0:2"}, dead={("source", "t", "7", "a")})
    assert len(raw) < 5_000 * 8  # near-sequential entries compress to a few bytes each
    with pytest.raises(ValueError, match="not a position marker"):
        Marker.from_bytes(b"{}")


def test_marker_of_the_earlier_encoding_and_a_non_finite_watermark_read_back() -> None:
    # Markers stay on the compacted topic across upgrades: one written as `json` at zlib level 6
    # (before the entries went through orjson at level 1) still reads; and a watermark of
    # -Infinity keeps its JSON spelling (orjson would write null).
    m = _marker(entries=[(0, 38, "99|10|1|4", 3), (1, 11, "97|8|1|3", -1)], sources={"a:3": 38})
    body = {
        "incarnation": m.incarnation,
        "batch": m.batch,
        "offsets": m.offsets,
        "outputs": m.outputs,
        "watermark": m.watermark,
        "scalars": m.scalars,
        "counters": m.counters,
        "entries": [list(e) if e[3] >= 0 else list(e[:3]) for e in m.entries],
        "at": m.at,
        "skip": {"results": [], "dead": []},
        "sources": m.sources,
    }
    earlier = zlib.compress(json.dumps(body, separators=(",", ":")).encode(), 6)
    assert Marker.from_bytes(earlier) == m
    assert json.loads(zlib.decompress(m.to_bytes())) == body  # what an earlier reader parses
    unformed = _marker(watermark=None, scalars={"watermark": float("-inf"), "next_seq": 1})
    assert Marker.from_bytes(unformed.to_bytes()).scalars["watermark"] == float("-inf")


def _entry(i: int, off: int, ts: int) -> Entry:
    e = Entry(i, 0, off, ts, {"k": 1}, size=9)
    e.seq = off
    return e


def _store_and_outputs() -> tuple[RedisStateStore, OutputTopics]:
    return RedisStateStore("redis://127.0.0.1:1/0"), OutputTopics("out", 1, "dead", 1, 1)


def test_keeper_follows_commits_and_marks_only_acknowledged_state() -> None:
    async def run() -> None:
        store, outputs = _store_and_outputs()
        log = PositionLog(KafkaClients("127.0.0.1:1"), prefix="p:")
        keeper = PositionKeeper(log, "q", 0, INC, store=store, outputs=outputs)
        first = _entry(0, 5, 50)
        checkpoint = Checkpoint(
            epoch=1, batch=3, offsets={"a": 6}, scalars={"watermark": 40.0}, entries=[first],
            outboxes={"results": OutboxState(acked_offset=17), "dead": OutboxState()},
            counters={"records_in": 6}, output_start={"results": 10, "dead": 4},
        )  # fmt: skip
        keeper.reset(checkpoint)
        second, third, moved = _entry(0, 6, 51), _entry(1, 2, 52), _entry(1, 2, 52)
        moved.partition = 5  # a re-keyed input's record: same input and offset, another source partition
        built = BuiltBatch(
            CommitBatch(batch=4, offsets={"a": 7, "b": 3}, scalars={"watermark": 45.0},
                        added=[(second, b"{}"), (third, b"{}"), (moved, b"{}")], expired=[first],
                        counters={"records_in": 2}, sources={"b:5": 2}),
            [], [], 2, None,
        )  # fmt: skip
        assert keeper.batch(built) is built
        keeper.published("results", 20)
        m = keeper.marker(4)
        assert m.offsets == {"a": 7, "b": 3} and m.watermark == 45.0
        assert sorted(m.entries) == [(0, 6, "51|9|1|6", -1), (1, 2, "52|9|1|2", -1), (1, 2, "52|9|1|2", 5)]
        assert m.sources == {"b:5": 2}
        assert m.outputs == {"results": 21, "dead": 4} and m.counters == {"records_in": 8}
        # a publish in flight that fails: no marker is written for that state
        failed: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        failed.set_exception(RuntimeError("publish failed"))
        await keeper.tick(4, [failed])
        assert keeper._pending is None
        await store.aclose()

    asyncio.run(run())


def test_a_marker_packs_a_held_entry_again_only_once_its_header_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # While a watermark held back keeps a backlog in the windows, a marker a second must not pack
    # every held entry anew: only those added, released (`seq`) or shed (`passes`) since the last.
    packed: list[int] = []

    def counting_pack(entry: Entry) -> bytes:
        packed.append(entry.offset)
        return pack_entry(entry)

    monkeypatch.setattr("streamjoin.joiner.recovery.positions.pack_entry", counting_pack)
    store, outputs = _store_and_outputs()
    keeper = PositionKeeper(
        PositionLog(KafkaClients("127.0.0.1:1"), prefix="p:"), "q", 0, INC, store=store, outputs=outputs
    )
    keeper.reset(Checkpoint(1, 0, {}, {}, [], {}, {}, {}))
    held = [_entry(0, off, 50 + off) for off in range(4)]
    added = BuiltBatch(
        CommitBatch(batch=1, offsets={"a": 4}, scalars={"watermark": 1.0}, added=[(e, b"{}") for e in held]),
        [], [], 0, None,
    )  # fmt: skip
    keeper.batch(added)
    assert sorted(keeper.marker(1).entries) == [(0, off, f"{50 + off}|9|1|{off}", -1) for off in range(4)]
    assert sorted(packed) == [0, 1, 2, 3]
    packed.clear()
    assert keeper.marker(1).entries == keeper.marker(1).entries and packed == []  # nothing changed
    held[1].seq, held[2].passes = 7, False  # released, shed
    expired = BuiltBatch(
        CommitBatch(batch=2, offsets={"a": 4}, scalars={"watermark": 2.0}, expired=[held[3]]), [], [], 0, None
    )
    keeper.batch(expired)
    rows = keeper.marker(2).entries
    assert sorted(packed) == [1, 2]
    assert sorted(rows) == [(0, 0, "50|9|1|0", -1), (0, 1, "51|9|1|7", -1), (0, 2, "52|9|0|2", -1)]
    assert len(keeper._rows) == 3  # the expired entry's row is gone with it


def _result(rid: str) -> OutboxRecord:
    return OutboxRecord(None, b'{"query":"q","ts":1,"tuples":{},"id":"%s"}' % rid.encode())


def test_published_ids_drop_each_record_once() -> None:
    results = [_result("t:0:1|u:0:2"), _result("t:0:3|u:0:2"), _result("t:0:1|u:0:2")]
    dead = [OutboxRecord(None, b"x", (("source-topic", b"t"), ("source-offset", b"7"), ("stream", b"a")))]
    built = BuiltBatch(
        CommitBatch(batch=2, offsets={}, scalars={}, outbox={"results": results, "dead": dead}),
        results, dead, 3, None,
    )  # fmt: skip
    seen = PublishedIds(results={"t:0:1|u:0:2"}, dead={("source", "t", "7", "a")})
    kept = seen.filter(built)
    assert [r.value for r in kept.results] == [results[1].value, results[2].value]
    assert kept.commit.outbox["results"] == [results[1], results[2]]
    assert kept.dead == [] and kept.commit.outbox["dead"] == []
    # the commit of that batch failed: the next attempt produces the same records again
    seen.undo()
    assert len(seen.filter(built).results) == 2
    seen.confirm()
    assert len(seen) == 0


def test_registry_epoch_holds_a_lost_registry() -> None:
    e = RegistryEpoch()
    empty = RegistrySnapshot(version=0, streams={}, queries={})
    assert e.admit(empty, running=False) == "apply"  # a new deployment
    assert e.admit(empty, running=True) == "hold"  # queries running and the registry gone
    assert e.problem is not None
    assert e.admit(RegistrySnapshot(version=1, streams={}, queries={}, epoch="x"), running=True) == "apply"
    assert e.admit(empty, running=False) == "hold"  # it had an epoch: lost, not new
    assert e.admit(RegistrySnapshot(version=4, streams={}, queries={}, epoch="x"), running=True) == "apply"
    assert e.admit(RegistrySnapshot(version=9, streams={}, queries={}, epoch="y"), running=True) == "replaced"
    assert e.problem is None


def test_commit_on_a_redis_that_lost_meta_is_fenced_and_epochs_stay_above(redis_server: str) -> None:
    async def run() -> None:
        store = RedisStateStore(redis_server, prefix=f"t{uuid.uuid4().hex[:8]}:")
        try:
            before = await store.claim("q", 0, "w1", ["t.a"])
            await store.commit("q", 0, before.epoch, CommitBatch(batch=1, offsets={"t.a": 0}, scalars={}))
            k = store.keys("q", 0)
            await store._redis.delete(k.meta, k.epochs)  # what a Redis restarted empty holds of them
            with pytest.raises(FencedError):  # never recreates `meta`
                await store.commit("q", 0, before.epoch, CommitBatch(batch=2, offsets={"t.a": 5}, scalars={}))
            assert not await store._redis.exists(k.meta)
            after = await store.claim("q", 0, "w2", ["t.a"])
            assert after.epoch > before.epoch and not after.positioned
        finally:
            await store.aclose()

    asyncio.run(run())


def test_a_deleted_query_leaves_no_marker_and_no_repartitioner_mark(
    kafka_broker: str, make_topic: Callable[..., str]
) -> None:
    """`forget` tombstones the operators' markers and the repartitioners' marks of the query, and
    only that query's."""
    topic = make_topic("positions", config={"cleanup.policy": "compact"})

    async def run() -> tuple[bytes | None, bytes | None, bytes | None, bytes | None]:
        log = PositionLog(KafkaClients(kafka_broker), prefix="p:", topic=topic, cache_ms=0)
        try:
            await log.write("q", 0, _marker())
            await log.put(log.rekey_key("q", "gen/a", 3), b"mark of q")
            await log.put(log.rekey_key("other", "gen/a", 3), b"mark of other")
            await log.forget("q", [0], [("gen/a", 3)])
            return (
                await log.read(log.key("q", 0)),
                await log.read(log.rekey_key("q", "gen/a", 3)),
                await log.read(log.rekey_key("other", "gen/a", 3)),
                await log.read(log.key("q", 1)),
            )
        finally:
            log.close()

    marker, mark, other, never = asyncio.run(run())
    assert marker is None and mark is None and never is None
    assert other == b"mark of other"
