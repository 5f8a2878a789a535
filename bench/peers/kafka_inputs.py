"""A workload's inputs on Apache Kafka: topics of 4 partitions, each keyed by its stream's join field.

Every record of `events.jsonl` goes to its stream's topic as the same JSON value, with the value of
the stream's key field (`joinplan.topic_keys`) as the record key, partitioned by Kafka's default
partitioner (murmur2 of the key, as the Java clients and Kafka Streams' re-partitioning do), so a
record with key value v is in the same partition number of every topic keyed by that field. After
the events, one record per stream and partition lies two largest windows past the last timestamp
(`flush_ts`), with keys that join nothing: it moves every partition's watermark past the workload
(streamjoin releases results in timestamp order once the watermark passes them; the peers emit at
once). Not further: a record far ahead would close Kafka Streams' windows on any record it had not
read yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peers.joinplan import load, plan, topic_keys
from confluent_kafka import Producer

from streamjoin.topics import TopicSpec, create_topics

__all__ = [
    "PARTITIONS",
    "KafkaInputs",
    "create",
    "create_output",
    "events",
    "flush",
    "flush_ts",
    "new_producer",
    "produce",
    "produce_workload",
]

PARTITIONS = 4
_KEEP_FOREVER = {"retention.ms": "-1"}  # the timestamps are in 1970: time retention would delete them


@dataclass(frozen=True)
class KafkaInputs:
    """A workload's input topics on the broker: stream -> topic, stream -> key field."""

    topics: dict[str, str]
    keys: dict[str, str]
    fields: dict[str, tuple[str, ...]]


def create(bootstrap: str, directory: Path, suffix: str) -> KafkaInputs:
    """Create the input topics of the workload in `directory` (names end with `suffix`)."""
    steps = plan(load(directory))
    topics = {s.stream: f"peers.{s.stream}.{suffix}" for s in steps}
    create_output(bootstrap, list(topics.values()))
    fields = {s.stream: ("ts", *s.fields) for s in steps}
    return KafkaInputs(topics, topic_keys(steps), fields)


def create_output(bootstrap: str, names: list[str]) -> None:
    """Create topics of `PARTITIONS` partitions kept forever."""
    create_topics(bootstrap, [TopicSpec(n, "internal", PARTITIONS, config=_KEEP_FOREVER) for n in names])


def new_producer(bootstrap: str, linger_ms: int = 5) -> Producer:
    """Return a producer partitioning keyed records as the Java clients do. Idempotent: a retried
    batch never lands behind a later one, so every partition stays in timestamp order."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
            "linger.ms": linger_ms,
            "batch.size": 1 << 20,
            "queue.buffering.max.messages": 2_000_000,
        }
    )


def events(directory: Path, limit: int | None = None) -> Iterator[tuple[str, dict[str, int]]]:
    """Yield the workload's (stream, record) in arrival order, the first `limit` if given."""
    with (directory / "events.jsonl").open("rb") as lines:
        for number, line in enumerate(lines):
            if limit is not None and number >= limit:
                return
            event = json.loads(line)
            yield event["stream"], event["record"]


def produce(p: Producer, inputs: KafkaInputs, pairs: Iterable[tuple[str, dict[str, Any]]]) -> int:
    """Produce `pairs` to their topics, keyed; return the largest timestamp produced."""
    last_ts = 0
    for stream, record in pairs:
        last_ts = max(last_ts, int(record["ts"]))
        value = json.dumps(record, separators=(",", ":")).encode()
        key = str(record[inputs.keys[stream]]).encode()
        while True:
            try:
                p.produce(inputs.topics[stream], value, key=key)
                break
            except BufferError:
                p.poll(0.01)
    return last_ts


def flush(p: Producer, inputs: KafkaInputs, ts: int) -> None:
    """Produce one record at `ts` per stream and partition whose fields join nothing (negative)."""
    for i, (stream, topic) in enumerate(inputs.topics.items()):
        for part in range(PARTITIONS):
            value = -(1 + i + part * len(inputs.topics))
            record = {"ts": ts, **dict.fromkeys(inputs.fields[stream][1:], value)}
            p.produce(topic, json.dumps(record).encode(), key=str(value).encode(), partition=part)


def produce_workload(bootstrap: str, inputs: KafkaInputs, directory: Path) -> None:
    """Produce the workload's events to `inputs`, then the flush records after the last one."""
    p = new_producer(bootstrap)
    last_ts = produce(p, inputs, events(directory))
    flush(p, inputs, flush_ts(directory, last_ts))
    p.flush(300)


def flush_ts(directory: Path, last_ts: int) -> int:
    """Return the timestamp of the flush records after `last_ts`: two largest windows later."""
    return last_ts + 2 * max(int(s["window_ms"]) for s in load(directory)["streams"]) + 1
