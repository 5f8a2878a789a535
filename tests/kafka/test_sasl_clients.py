"""The archiver and the back-fill's Kafka writer log in with the settings on the SASL/SCRAM broker.

Both connect as the `streamjoin` user with only `streamjoin_acls`, their options built from the
`STREAMJOIN_KAFKA_*` settings by `streamjoin.client_security`, as their commands build them.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from tests.kafka.sasl import SecuredNames, grant_streamjoin, produce_as

from streamjoin.archiver.service import Archiver, ArchiverConfig
from streamjoin.backfill.sink import KafkaSink
from streamjoin.client_security import aiokafka_options, librdkafka_options
from streamjoin.dev.kafka_security import SecuredKafka
from streamjoin.settings import Settings, load_settings
from streamjoin.topics import TopicSpec, create_topics

pytestmark = pytest.mark.timeout(180)


def _settings(kafka: SecuredKafka, user: str) -> Settings:
    """The settings a service reads from `SecuredKafka.env` (STREAMJOIN_KAFKA_*)."""
    env = kafka.env(user)
    return load_settings(
        kafka_bootstrap=env["STREAMJOIN_KAFKA_BOOTSTRAP"],
        kafka_security_protocol=env["STREAMJOIN_KAFKA_SECURITY_PROTOCOL"],
        kafka_sasl_mechanism=env["STREAMJOIN_KAFKA_SASL_MECHANISM"],
        kafka_sasl_username=env["STREAMJOIN_KAFKA_SASL_USERNAME"],
        kafka_sasl_password=env["STREAMJOIN_KAFKA_SASL_PASSWORD"],
    )


@pytest.fixture
def names(secured_kafka: SecuredKafka) -> SecuredNames:
    names = SecuredNames.fresh(["a"])
    grant_streamjoin(secured_kafka, names)
    specs = [TopicSpec(names.inputs["a"], "input", 1), TopicSpec(names.output, "output", 1)]
    admin = secured_kafka.security.librdkafka("admin")
    assert all(r.ok for r in create_topics(secured_kafka.bootstrap, specs, client_config=admin))
    return names


def test_the_archiver_reads_the_inputs(
    secured_kafka: SecuredKafka, names: SecuredNames, tmp_path: Path
) -> None:
    topic = names.inputs["a"]
    produce_as(secured_kafka.client_config("admin"), {"a": topic}, [("a", 0, {"ts": n}) for n in range(5)])
    settings = _settings(secured_kafka, "streamjoin")
    archiver = Archiver(
        ArchiverConfig(
            bootstrap=settings.kafka_bootstrap,
            archive_url=str(tmp_path / "archive"),
            topics=(topic,),
            flush_interval_ms=200,
            kafka_options=aiokafka_options(settings),
        )
    )

    async def archive() -> None:
        task = asyncio.create_task(archiver.run())
        deadline = time.monotonic() + 60
        while not archiver.files_written and time.monotonic() < deadline and not task.done():
            await asyncio.sleep(0.2)
        archiver.stop()
        await task

    asyncio.run(archive())
    assert [(f.topic, f.first, f.last) for f in archiver.files_written] == [(topic, 0, 4)]


def test_the_backfill_sink_writes_the_output(secured_kafka: SecuredKafka, names: SecuredNames) -> None:
    settings = _settings(secured_kafka, "streamjoin")
    sink = KafkaSink(settings.kafka_bootstrap, names.output, config=librdkafka_options(settings))
    sink.write([("r1", "q", 1.0, 0, b"k", json.dumps({"id": "r1"}).encode())])
    sink.close()
    consumer = Consumer({**secured_kafka.client_config("admin"), "group.id": "check"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(names.output, 0), timeout=10) == (0, 1)
    finally:
        consumer.close()
