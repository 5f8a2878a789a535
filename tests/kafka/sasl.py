"""What the SASL/ACL tests share: the names one test uses on the secured broker, and its ACLs."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from streamjoin.dev.kafka_security import SecuredKafka
from streamjoin.joiner.config import WorkerConfig
from streamjoin.kafka import Admin, streamjoin_acls
from streamjoin.testing import Event
from streamjoin.topics import SLOTS_TOPIC

__all__ = ["SecuredNames", "grant_streamjoin", "produce_as", "write_catalog"]

# The declared internal topics the services need (topics/topics.json), with their partitions.
INTERNAL_TOPICS = {"streamjoin.registry": 1, "streamjoin.positions": 1, SLOTS_TOPIC: WorkerConfig().slots}


@dataclass(frozen=True)
class SecuredNames:
    """Names unique to one test: the input topics by stream, output, dead letters, group, prefix."""

    run: str
    inputs: dict[str, str]
    output: str
    dead_letter: str
    group: str
    prefix: str

    @classmethod
    def fresh(cls, streams: Sequence[str]) -> SecuredNames:
        run = uuid.uuid4().hex[:8]
        return cls(
            run=run,
            inputs={s: f"sasl-in.{run}.{s}" for s in streams},
            output=f"sasl-out.{run}",
            dead_letter=f"sasl-out.{run}.dead-letter",
            group=f"sasl-joiner-{run}",
            prefix=f"sasl{run}:",
        )


def grant_streamjoin(kafka: SecuredKafka, names: SecuredNames) -> None:
    """Give the `streamjoin` user what the services need (`streamjoin_acls`), as the admin."""
    outputs = [names.output, names.dead_letter]
    grants = streamjoin_acls(
        "User:streamjoin",
        inputs=list(names.inputs.values()),
        outputs=outputs,
        group=names.group,
        pattern="literal",
    )
    admin = Admin(kafka.bootstrap, client_config=kafka.security.librdkafka("admin"))
    failed = {str(g): e for g, e in admin.create_acls(grants).items() if e is not None}
    assert not failed, failed


def write_catalog(path: Path, names: SecuredNames, partitions: int) -> Path:
    """Write the declaration `streamjoin topics create` reads: the internal topics and this test's."""
    topics: list[dict[str, Any]] = [
        {"name": name, "role": "internal", "partitions": n, "config": {"cleanup.policy": "compact"}}
        for name, n in INTERNAL_TOPICS.items()
    ]
    topics += [{"name": t, "role": "input", "partitions": partitions} for t in names.inputs.values()]
    topics.append({"name": names.output, "role": "output", "partitions": partitions})
    topics.append({"name": names.dead_letter, "role": "dead-letter", "partitions": partitions})
    path.write_text(json.dumps({"topics": topics}))
    return path


def produce_as(
    config: Mapping[str, str], topics: Mapping[str, str], items: Sequence[tuple[str, int, dict[str, Any]]]
) -> list[Event]:
    """Produce `items` (stream, partition, record) with the client configuration `config`; return the
    events as written (for the oracle)."""
    producer = Producer({**config, "enable.idempotence": True, "linger.ms": 5})
    events: list[Event | None] = [None] * len(items)
    failures: list[str] = []

    def report(i: int, stream: str, record: dict[str, Any]) -> Any:
        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(str(err))
            else:
                events[i] = Event(stream, msg.partition(), msg.offset(), record["ts"], record)

        return delivered

    for i, (stream, partition, record) in enumerate(items):
        producer.produce(
            topics[stream],
            json.dumps(record).encode(),
            partition=partition,
            on_delivery=report(i, stream, record),
        )
        producer.poll(0)
    left = producer.flush(60)
    assert left == 0 and not failures, f"produce failed: {left} left, {failures[:3]}"
    return [e for e in events if e is not None]
