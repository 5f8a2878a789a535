"""The re-keying producer after the broker fenced it: replaced between attempts only, so a
repartitioner attempt never writes a batch after one of its batches failed (the operators' duplicate
filter assumes each source partition's records arrive in source-offset order)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from streamjoin.joiner.publish.publisher import Publisher
from streamjoin.joiner.publish.replaceable_producer import ReplaceableProducer
from streamjoin.joiner.repartition.producer import RekeyProducer
from streamjoin.kafka import KafkaClients

from .own_broker import own_broker


def test_a_fenced_producer_is_replaced_for_the_next_attempt_and_refuses_the_running_ones() -> None:
    async def run() -> None:
        producer = RekeyProducer(KafkaClients("127.0.0.1:1"), client_id="t", message_timeout_ms=1_000)
        try:
            running = producer.begin()
            assert running == 0 and producer.begin() == 0  # not fenced: nothing replaced
            first = producer.delivery(running)
            producer.send(first, "t", 0, b"1", None, [], 1)
            # the broker refuses a record of this producer: PRODUCER_FENCED (poll thread)
            producer._delivered(first, KafkaError(KafkaError.PRODUCER_FENCED), None)
            with pytest.raises(RuntimeError, match="fenced"):  # the running attempt writes no more
                producer.send(producer.delivery(running), "t", 0, b"2", None, [], 2)
            later = producer.begin()  # the next attempt: a new producer
            assert later == 1
            with pytest.raises(RuntimeError, match="fenced"):  # an attempt of the old producer
                producer.send(producer.delivery(running), "t", 0, b"3", None, [], 3)
            producer.send(producer.delivery(later), "t", 0, b"4", None, [], 4)  # queued
            with pytest.raises(RuntimeError, match="PRODUCER_FENCED"):
                await first.future
        finally:
            producer.close(timeout_ms=10)

    asyncio.run(run())


def test_both_producers_keep_the_gapless_guarantee() -> None:
    """librdkafka accepts the option only with idempotence; a permanent error then stops the
    producer (fatal) rather than writing the later batches (`producer_gaps`)."""
    kafka = KafkaClients("127.0.0.1:1")
    rekey = RekeyProducer(kafka, client_id="t", message_timeout_ms=1_000)
    publisher = Publisher(kafka, client_id="t", message_timeout_ms=1_000)
    try:
        for config in (rekey._producer.config, publisher._producer.config):
            assert config["enable.gapless.guarantee"] is True and config["enable.idempotence"] is True
    finally:
        rekey.close(timeout_ms=10)
        publisher.close(timeout_ms=10)


def test_a_timed_out_record_fails_the_later_queued_ones_instead_of_sending_them() -> None:
    """With Kafka, librdkafka bumps the epoch after a record timed out and sends the records queued
    after it: a gap. The poll thread purges them at once, and the next attempt gets a new producer.
    (No broker answers here: the first batch times out after 2 s, the second would only at 3.5 s.)"""

    async def run() -> tuple[str, str, float, int]:
        producer = RekeyProducer(KafkaClients("127.0.0.1:1"), client_id="t", message_timeout_ms=2_000)
        try:
            attempt = producer.begin()
            first, second = producer.delivery(attempt), producer.delivery(attempt)
            producer.send(first, "t", 0, b"1", None, [], 1)
            first.seal()
            await asyncio.sleep(1.5)
            began = time.monotonic()
            producer.send(second, "t", 0, b"2", None, [], 2)
            second.seal()
            outcomes = []
            for delivery in (first, second):
                with pytest.raises(RuntimeError) as failed:
                    await asyncio.wait_for(delivery.future, 10)
                outcomes.append(str(failed.value))
            return outcomes[0], outcomes[1], time.monotonic() - began, producer.begin()
        finally:
            producer.close(timeout_ms=10)

    first, second, second_failed_after_s, next_generation = asyncio.run(run())
    assert "_MSG_TIMED_OUT" in first, first
    assert "_PURGE_QUEUE" in second, second  # purged, not timed out (nor sent after the bump)
    assert second_failed_after_s < 2.0, second_failed_after_s
    assert next_generation == 1  # the next attempt writes with a new producer


@pytest.mark.integration
def test_a_batch_in_flight_when_the_producer_is_replaced_still_resolves(tmp_path: Path) -> None:
    """The broker frozen (SIGSTOP) with a batch in flight, the producer replaced meanwhile (another
    repartitioner's record timed out): the batch still resolves once the broker answers again (the
    replaced producer is polled until empty; purging it in flight was a fatal error that killed the
    poll thread), and the new producer's batches are acknowledged: nothing waits for ever."""

    async def run(pid: int, bootstrap: str, topic: str) -> tuple[str, bool]:
        producer = RekeyProducer(KafkaClients(bootstrap), client_id="t", message_timeout_ms=3_000)
        try:
            attempt = producer.begin()
            warm = producer.delivery(attempt)
            producer.send(warm, topic, 0, b"0", None, [], 1)
            warm.seal()
            await asyncio.wait_for(warm.future, 20)  # connected, metadata known
            os.kill(pid, signal.SIGSTOP)
            try:
                stuck = producer.delivery(attempt)
                producer.send(stuck, topic, 0, b"1", None, [], 2)
                stuck.seal()
                await asyncio.sleep(0.5)  # sent: in flight, unanswered
                producer._producer.broken = True  # as after another repartitioner's timed-out record
                later = producer.begin()
                assert later == attempt + 1
                await asyncio.sleep(1.0)
            finally:
                os.kill(pid, signal.SIGCONT)
            outcome = "written"
            try:
                await asyncio.wait_for(stuck.future, 30)
            except RuntimeError as exc:  # timed out or fenced: failed, and known to have failed
                outcome = str(exc)
            fresh = producer.delivery(later)
            producer.send(fresh, topic, 0, b"2", None, [], 3)
            fresh.seal()
            await asyncio.wait_for(fresh.future, 30)
            return outcome, producer._producer.thread.is_alive()
        finally:
            producer.close(timeout_ms=10)

    with own_broker(tmp_path, "retired") as (pid, bootstrap, topic):
        outcome, polling = asyncio.run(run(pid, bootstrap, topic))
    assert outcome == "written" or "TIMED_OUT" in outcome or "FENCED" in outcome, outcome
    assert polling


def test_only_the_current_producers_failures_mark_it_for_replacement() -> None:
    """The life cycle both producers share: a replaced producer's late failure says nothing of the
    new one; a failure of the current one that may leave a gap marks it."""
    producer = ReplaceableProducer(KafkaClients("127.0.0.1:1"), {"message.timeout.ms": 1_000}, role="t")
    try:
        old = producer.generation
        producer.broken = True
        producer.replace()
        assert producer.generation == old + 1 and not producer.broken
        producer.delivery_failed(KafkaError(KafkaError._MSG_TIMED_OUT), old)
        assert not producer.broken
        producer.delivery_failed(KafkaError(KafkaError._PURGE_QUEUE), producer.generation)
        assert not producer.broken  # a purged record leaves no gap
        producer.delivery_failed(KafkaError(KafkaError._MSG_TIMED_OUT), producer.generation)
        assert producer.broken
    finally:
        producer.close(10, "nothing")
