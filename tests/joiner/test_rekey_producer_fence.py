"""The re-keying producer after the broker fenced it: replaced between attempts only, so a
repartitioner attempt never writes a batch after one of its batches failed (the operators' duplicate
filter assumes each source partition's records arrive in source-offset order)."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import KafkaError

from streamjoin.joiner.rekey_producer import RekeyProducer
from streamjoin.kafka import KafkaClients


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
