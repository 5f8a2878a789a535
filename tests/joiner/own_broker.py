"""A broker of a test's own, for tests that freeze it (SIGSTOP): stopping the session's broker would
stall every other test's clients."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

from streamjoin.dev.kafka_broker import KafkaBroker
from streamjoin.topics import TopicSpec, create_topics


@contextlib.contextmanager
def own_broker(workdir: Path, topic_prefix: str) -> Iterator[tuple[int, str, str]]:
    """Run a broker with its files under `workdir` and a fresh topic of one partition; yield (the
    broker's pid, its bootstrap, the topic); stop the broker after."""
    broker = KafkaBroker()
    broker.start(workdir)
    try:
        assert broker.bootstrap is not None and broker.process is not None
        assert broker.process.pid is not None
        topic = f"{topic_prefix}.{uuid.uuid4().hex[:8]}"
        create_topics(broker.bootstrap, [TopicSpec(topic, "internal", 1)])
        yield broker.process.pid, broker.bootstrap, topic
    finally:
        broker.stop()
