"""Group-less aiokafka consumers and the position helpers every reader of the product shares.

No reader of streamjoin joins a consumer group: the joiner's operators keep their offsets in Redis
(Faust's group only decides who owns which partition), the archiver in its file names, and the
control plane reads results without committing. aiokafka reads about 250k records/s from the
embedded broker, against about 9k through Faust's stream layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

from aiokafka import AIOKafkaConsumer

from streamjoin.kafka.admin import Admin
from streamjoin.kafka.connection import KafkaClients
from streamjoin.kafka.structs import ConsumedRecord, OffsetAndTimestamp, TopicPartition
from streamjoin.query.model import StartPosition

__all__ = [
    "DEFAULT_FETCH_WAIT_MS",
    "Consumer",
    "end_offsets",
    "new_consumer",
    "partition_counts",
    "partitions_of",
    "reader",
    "start_consumer",
    "start_offsets",
    "stop_without_leaving_group",
]


class Consumer(Protocol):
    """The calls of aiokafka's `AIOKafkaConsumer` that streamjoin uses (all without a group)."""

    async def start(self) -> None:
        """Connect and fetch the cluster's metadata."""

    async def stop(self) -> None:
        """Close the connections (nothing is committed)."""

    async def topics(self) -> set[str]:
        """Refresh the metadata; return every topic's name."""
        ...

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """Return the topic's partitions from the cached metadata (None if unknown)."""
        ...

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Read exactly `partitions` from now on."""

    def assignment(self) -> set[TopicPartition]:
        """Return the assigned partitions."""
        ...

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Fetch `partition` from `offset` next."""

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        """Fetch `partitions` from their first retained record next."""
        ...

    async def position(self, partition: TopicPartition) -> int:
        """Return the offset of the next record fetched from `partition`."""
        ...

    def highwater(self, partition: TopicPartition) -> int | None:
        """Return `partition`'s end as of the last fetch response (None before one)."""
        ...

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """Return when (wall time, ms) the last fetch response of `partition` came (None before one)."""
        ...

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumedRecord]]:
        """Return the records fetched (of `partitions`, or of every assigned one) within `timeout_ms`."""
        ...

    async def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Return what the broker lists as each partition's end (see `end_offsets` for its caveat)."""
        ...

    async def beginning_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Return each partition's first retained offset."""
        ...

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """Return each partition's first record at or after its timestamp (ms), None if there is none."""
        ...


def reader(
    bootstrap: str,
    *,
    options: Mapping[str, Any] | None = None,
    client_id: str | None = None,
    auto_offset_reset: Literal["earliest", "latest"] = "earliest",
) -> Consumer:
    """Return an unstarted group-less consumer with the client's default tuning.

    Args:
        bootstrap: the brokers, `host:port[,host:port]`.
        options: more keyword arguments, the security ones of `KafkaClients.aiokafka`.
        client_id: how the brokers name the client (aiokafka's default when None).
        auto_offset_reset: where a partition without a valid position starts.
    """
    extra = {} if client_id is None else {"client_id": client_id}
    consumer: Consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset=auto_offset_reset,
        **extra,
        **(options or {}),
    )
    return consumer


DEFAULT_FETCH_WAIT_MS = 500
"""How long the broker may hold a fetch that found no new record (Kafka's own default). Apache Kafka
answers a waiting fetch as soon as a byte arrives (`fetch.min.bytes` 1), so the wait costs no
latency; a short one costs CPU in every idle consumer and in the broker (an idle worker with one
re-keyed 4-partition query: 0.42 cores and the broker 0.40 with 10 ms; 0.10 and 0.07 with 500 ms).
The embedded Tansu sleeps a fetch's wait out, so the dev stack runs its workers with 10 ms there."""


def new_consumer(
    kafka: KafkaClients, *, client_id: str, fetch_wait_ms: int = DEFAULT_FETCH_WAIT_MS
) -> Consumer:
    """Return an unstarted group-less consumer tuned for large batches and short waits (the joiner's)."""
    consumer: Consumer = AIOKafkaConsumer(
        **kafka.aiokafka,
        bootstrap_servers=kafka.bootstrap,
        client_id=client_id,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=fetch_wait_ms,
        fetch_max_bytes=64 << 20,
        max_partition_fetch_bytes=1 << 20,
        request_timeout_ms=30_000,
        metadata_max_age_ms=5_000,
    )
    return consumer


async def start_consumer(consumer: Consumer) -> None:
    """Start `consumer` and let its background tasks take their first step.

    A group-less aiokafka consumer stopped before its coordinator's first task ran raises
    `CancelledError` out of `stop()` (it awaits a task cancelled before it started), which ends the
    caller's task as if it had been cancelled: an operator that had nothing to recover was restarted
    every second that way. A caller cancelled while this runs gets the consumer stopped, not left
    with open connections (its `try: ... finally: stop()` begins only after this returns).
    """
    try:
        await consumer.start()
        await asyncio.sleep(0)
    except BaseException:
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await consumer.stop()
        raise


async def partitions_of(consumer: Consumer, topic: str) -> set[int] | None:
    """Return the partitions of `topic` from a fresh metadata request (None: no such topic).

    `consumer.topics()` refreshes a *copy* of the metadata and returns only names, and
    `partitions_for_topic` answers from the client's own cache, which holds only the topics the
    client tracks: on Apache Kafka a group-less consumer therefore never learns a topic's partitions
    that way (an embedded broker that answered every metadata request with all topics hid this). The
    client's full-metadata request is the one place its partitions are read from.
    """
    client = getattr(consumer, "_client", None)
    if client is None:  # not aiokafka's consumer (a test double): its cache is the truth
        await consumer.topics()
        return consumer.partitions_for_topic(topic)
    cluster = await client.fetch_all_metadata()
    parts: set[int] | None = cluster.partitions_for_topic(topic)
    return parts


async def partition_counts(consumer: Consumer, kafka: KafkaClients, topics: Iterable[str]) -> dict[str, int]:
    """Return the partition count of each topic that exists (missing topics are left out).

    The consumer's cached metadata answers for the topics it knows; the others are looked up in one
    metadata request of an admin client (the consumer has no public call that refreshes its cache).
    """
    counts: dict[str, int] = {}
    unknown: list[str] = []
    for topic in topics:
        parts = consumer.partitions_for_topic(topic)
        if parts is None:
            unknown.append(topic)
        elif parts:
            counts[topic] = len(parts)
    if unknown:
        admin = Admin(kafka.bootstrap, client_config=kafka.librdkafka)
        existing = await asyncio.to_thread(admin.topics)
        counts.update({t: existing[t] for t in unknown if existing.get(t)})
    return counts


async def end_offsets(
    consumer: Consumer, tps: Iterable[TopicPartition], *, exact: bool, timeout_ms: int = 10_000
) -> dict[TopicPartition, int]:
    """Return the high watermark (offset of the next record) of each partition.

    `exact`: the broker lists a partition's end exactly (ListOffsets answers the high watermark), as
    Apache Kafka does (`KafkaClients.listed_ends_exact`); the listing is then the answer. The embedded
    Tansu lists the base offset of the partition's last record batch instead, a lower bound: the
    partitions are then fetched from there once and the fetch response's high watermark is used.
    (That fetch waits out the consumer's fetch wait on an empty partition, 500 ms by default, which
    is why it is not done where the listing is exact.) Leaves `consumer` assigned to `tps`.

    Raises:
        TimeoutError: no fetch response within `timeout_ms`.
    """
    tps = list(tps)
    if not tps:
        return {}
    listed: dict[TopicPartition, int] = dict(await consumer.end_offsets(tps))
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, listed[tp])
    if exact:
        return listed
    deadline = time.monotonic() + timeout_ms / 1000
    while any(consumer.highwater(tp) is None for tp in tps):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no fetch response for {tps} within {timeout_ms} ms")
        await consumer.getmany(*tps, timeout_ms=100, max_records=1)
    return {tp: max(int(consumer.highwater(tp) or 0), listed[tp]) for tp in tps}


async def start_offsets(
    consumer: Consumer, tps: Iterable[TopicPartition], start: StartPosition, *, exact_ends: bool
) -> dict[TopicPartition, int]:
    """Return where a new reader starts each partition: `latest`, `earliest` or a timestamp (ms).
    `exact_ends`: see `end_offsets`."""
    tps = list(tps)
    if start == "latest":
        return await end_offsets(consumer, tps, exact=exact_ends)
    if start == "earliest":
        return dict(await consumer.beginning_offsets(tps))
    found = await consumer.offsets_for_times({tp: int(start) for tp in tps})
    hits = {tp: hit.offset for tp, hit in found.items() if hit is not None}
    ends = await end_offsets(consumer, [tp for tp in tps if tp not in hits], exact=exact_ends)
    return {tp: hits[tp] if tp in hits else ends[tp] for tp in tps}


def stop_without_leaving_group(consumer: Any) -> None:
    """Make the `stop` of `consumer`, a started aiokafka consumer of a group, send no LeaveGroup: the
    coordinator drops the member when its session times out, as it drops a crashed one (Kafka
    Streams' `internal.leave.group.on.close=false`; why: docs/joiner.md). aiokafka has no option
    for it: its coordinator's `close` leaves through `_maybe_leave_group`, replaced here on this
    instance only (should aiokafka rename it, `tests/joiner/test_group_leave.py` fails)."""
    coordinator = getattr(consumer, "_coordinator", None)
    if coordinator is None:  # never started: nothing to leave
        return

    async def forget_generation() -> None:
        coordinator.reset_generation()

    vars(coordinator)["_maybe_leave_group"] = forget_generation
