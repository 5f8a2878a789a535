"""The demo's producer connects with the stack's settings: SASL/SCRAM included, on a secured broker."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast

from confluent_kafka import Consumer, KafkaException, TopicPartition

from streamjoin.dev.demo import DEMO_STREAMS, ProduceDemoWorkloadStep
from streamjoin.dev.kafka_security import SecuredKafka
from streamjoin.dev.stack import EmbeddedStack
from streamjoin.dev.steps import DevContext
from streamjoin.settings import Settings, load_settings
from streamjoin.topics import TopicSpec, create_topics


@dataclass
class _SecuredStack:
    """The part of a running stack the demo's producer reads: its settings (here, the secured broker)."""

    kafka: SecuredKafka

    @property
    def bootstrap(self) -> str:
        return self.kafka.bootstrap

    def settings(self, **flags: Any) -> Settings:
        user = self.kafka.security.admin
        return load_settings(
            kafka_bootstrap=self.kafka.bootstrap,
            kafka_security_protocol="SASL_PLAINTEXT",
            kafka_sasl_mechanism=self.kafka.security.mechanism,
            kafka_sasl_username=user.name,
            kafka_sasl_password=user.password,
            **flags,
        )


def _end_offsets(kafka: SecuredKafka, topic: str) -> int:
    """The records in the topic's 4 partitions (retried while a new topic's leaders settle)."""
    consumer = Consumer({**kafka.client_config("admin"), "group.id": "demo-check"})
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                return sum(
                    consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(4)
                )
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def test_the_demo_producer_logs_in_with_the_settings(secured_kafka: SecuredKafka) -> None:
    topics = [TopicSpec(s["topic"], "input", 4) for s in DEMO_STREAMS]
    results = create_topics(
        secured_kafka.bootstrap, topics, client_config=secured_kafka.client_config("admin")
    )
    assert all(r.ok for r in results), results
    before = _end_offsets(secured_kafka, "demo.orders")
    stack = cast(EmbeddedStack, _SecuredStack(secured_kafka))
    summary = ProduceDemoWorkloadStep(orders=20).run(DevContext(stack, catalog=cast(Any, None)))
    assert summary.endswith("for 20 orders")
    assert _end_offsets(secured_kafka, "demo.orders") - before == 20
