"""Zombie fencing of publishes, against the real embedded broker: a fenced publish queues nothing,
and records queued before the process froze longer than the message timeout expire rather than
reach the topic after it resumes (the worker's message timeout is its session timeout)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from streamjoin.joiner.publish.publisher import Publisher, PublishError
from streamjoin.kafka import KafkaClients
from streamjoin.state.base import FencedError

from .own_broker import own_broker
from .test_publisher import _read_all, _records

_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from streamjoin.joiner.publish.outbox import OutboxRecord
    from streamjoin.joiner.publish.publisher import Publisher, PublishError
    from streamjoin.kafka import KafkaClients

    bootstrap, topic, timeout = sys.argv[1], sys.argv[2], sys.argv[3]

    async def main() -> None:
        publisher = Publisher(KafkaClients(bootstrap), linger_ms=900,
                              message_timeout_ms=None if timeout == "none" else int(timeout))
        records = [OutboxRecord(b"%d" % i, b'{"i":%d}' % i) for i in range(5)]
        task = asyncio.ensure_future(publisher.publish(topic, 0, 1, records, query="q", source_partition=0))
        await asyncio.sleep(0)  # the records are queued now; librdkafka holds them for linger.ms
        print("queued", flush=True)
        try:
            print("delivered", await task, flush=True)
        except PublishError as exc:
            print("failed", exc, flush=True)
        publisher.close(timeout_ms=3_000)

    asyncio.run(main())
    """
)


def test_a_fenced_publish_queues_nothing(make_topic: Callable[..., str], kafka_broker: str) -> None:
    topic = make_topic("fence", partitions=1)
    kafka = KafkaClients(kafka_broker)

    async def fenced() -> None:
        raise FencedError("owner epoch is 2, not 1")

    async def run() -> list[tuple[bytes, int | None]]:
        publisher = Publisher(kafka)
        try:
            with pytest.raises(FencedError):
                await publisher.publish(topic, 0, 1, _records(3), query="q", source_partition=0, fence=fenced)
            await publisher.publish(topic, 0, 1, _records(2, start=10), query="q", source_partition=0)
        finally:
            publisher.close()
        return await _read_all(kafka, topic)

    values = [value for value, _ in asyncio.run(run())]
    assert values == [r.value for r in _records(2, start=10)]


def _frozen_publish(bootstrap: str, topic: str, timeout: str) -> str:
    """Queue 5 records in a child process, freeze it 3 s (SIGSTOP) before they go out, resume it."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, bootstrap, topic, timeout], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "queued"
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(3)
        os.kill(child.pid, signal.SIGCONT)
        out, _ = child.communicate(timeout=30)
        return out
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.slow
def test_records_queued_before_a_long_freeze_expire(
    make_topic: Callable[..., str], kafka_broker: str
) -> None:
    kafka = KafkaClients(kafka_broker)
    bounded, unbounded = make_topic("frozen", partitions=1), make_topic("frozen", partitions=1)
    out = _frozen_publish(kafka_broker, bounded, "1000")
    assert out.startswith("failed") and "timed out" in out, out
    assert asyncio.run(_read_all(kafka, bounded)) == []
    # the control: librdkafka's default timeout (300 s) sends them after the freeze
    out = _frozen_publish(kafka_broker, unbounded, "none")
    assert out.startswith("delivered"), out
    assert len(asyncio.run(_read_all(kafka, unbounded))) == 5


def test_a_publish_in_flight_when_the_producer_is_replaced_still_resolves(tmp_path: Path) -> None:
    """The broker frozen with a publish in flight and the producer replaced meanwhile (as after a
    timed-out record): that publish resolves once the broker answers, and the next publish goes
    out; purging the old producer in flight was fatal and killed the poll thread (every later
    publish of the worker waited for ever)."""

    async def run(pid: int, kafka: KafkaClients, topic: str) -> tuple[str, list[bytes]]:
        publisher = Publisher(kafka, linger_ms=0, message_timeout_ms=3_000)
        try:
            await publisher.publish(topic, 0, 1, _records(1), query="q", source_partition=0)
            os.kill(pid, signal.SIGSTOP)
            try:
                stuck = asyncio.ensure_future(
                    publisher.publish(topic, 0, 2, _records(1, start=1), query="q", source_partition=0)
                )
                await asyncio.sleep(0.5)  # sent: in flight, unanswered
                publisher._producer.broken = True  # as after a timed-out record
                publisher._producer.replace()
                await asyncio.sleep(1.0)
            finally:
                os.kill(pid, signal.SIGCONT)
            try:
                outcome = f"written at {await asyncio.wait_for(stuck, 30)}"
            except PublishError as exc:
                outcome = str(exc)
            await asyncio.wait_for(
                publisher.publish(topic, 0, 3, _records(1, start=2), query="q", source_partition=0), 30
            )
        finally:
            publisher.close()
        return outcome, [value for value, _ in await _read_all(kafka, topic)]

    with own_broker(tmp_path, "renew") as (pid, bootstrap, topic):
        outcome, values = asyncio.run(run(pid, KafkaClients(bootstrap), topic))
    assert outcome.startswith("written") or "TIMED_OUT" in outcome or "FENCED" in outcome, outcome
    assert values[0] == _records(1)[0].value and values[-1] == _records(1, start=2)[0].value, values
