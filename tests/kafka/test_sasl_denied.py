"""On a broker with SASL/SCRAM and ACLs, only the streamjoin user reads results and writes the registry.

A client without credentials, one with a wrong password and one authenticated as a user without
ACLs can neither read a query's results topic nor write the registry's log (`streamjoin.registry`)
or an input topic; each is refused with its own error. The streamjoin user, with `streamjoin_acls`,
reads the results and writes the registry's log, and cannot write the inputs (it only reads them).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from tests.kafka.sasl import SecuredNames, grant_streamjoin

from streamjoin.dev.kafka_security import SecuredKafka
from streamjoin.kafka import Admin
from streamjoin.registry.durable import DEFAULT_REGISTRY_TOPIC
from streamjoin.topics import TopicSpec, create_topics

pytestmark = pytest.mark.timeout(300)

_LOG = logging.getLogger("tests.librdkafka")
_WAIT_S = 6.0

CLIENTS = ["no credentials", "wrong password", "user without ACLs"]


@dataclass
class Attempt:
    """What a client's request came to: the delivery or poll error, the client-level errors, records."""

    delivery: list[KafkaError | None] = field(default_factory=list)
    errors: list[KafkaError] = field(default_factory=list)
    records: int = 0
    poll_errors: list[KafkaError] = field(default_factory=list)

    def error_codes(self) -> set[int]:
        return {e.code() for e in self.errors}


@pytest.fixture(scope="module")
def secured(secured_kafka: SecuredKafka) -> Iterator[tuple[SecuredKafka, SecuredNames]]:
    """The streamjoin user's ACLs, the registry's log, an input and a results topic holding a result."""
    names = SecuredNames.fresh(["a"])
    grant_streamjoin(secured_kafka, names)
    admin = secured_kafka.security.librdkafka("admin")
    specs = [
        TopicSpec(DEFAULT_REGISTRY_TOPIC, "internal", 1),
        TopicSpec(names.inputs["a"], "input", 1),
        TopicSpec(names.output, "output", 1),
    ]
    assert all(r.ok for r in create_topics(secured_kafka.bootstrap, specs, client_config=admin))
    written = _produce(secured_kafka.client_config("admin"), names.output)
    assert written.delivery == [None], written.delivery
    yield secured_kafka, names


def _config(kafka: SecuredKafka, client: str) -> dict[str, str]:
    if client == "no credentials":
        return {"bootstrap.servers": kafka.bootstrap}
    if client == "wrong password":
        return {**kafka.client_config("streamjoin"), "sasl.password": uuid.uuid4().hex}
    if client == "user without ACLs":
        return kafka.client_config("other")
    return kafka.client_config(client)


def _produce(config: dict[str, str], topic: str) -> Attempt:
    """Write one record; not idempotent, so a refusal names the topic (not the cluster's IdempotentWrite)."""
    attempt = Attempt()
    producer = Producer(
        {
            **config,
            "enable.idempotence": False,
            "message.timeout.ms": int(_WAIT_S * 1000),
            "error_cb": attempt.errors.append,
            "logger": _LOG,
        }
    )
    producer.produce(topic, b'{"x": 1}', key=b"k", on_delivery=lambda err, _msg: attempt.delivery.append(err))
    producer.flush(_WAIT_S * 2)
    return attempt


def _read(config: dict[str, str], topic: str, group: str) -> Attempt:
    """Read the topic's partition 0 from offset 0 for a few seconds (in `group`, committing nothing)."""
    attempt = Attempt()
    consumer = Consumer(
        {
            **config,
            "group.id": group,
            "enable.auto.commit": False,
            "error_cb": attempt.errors.append,
            "logger": _LOG,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + _WAIT_S
        while time.monotonic() < deadline and not attempt.records:
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is None:
                attempt.records += 1
            else:
                attempt.poll_errors.append(error)
    finally:
        consumer.close()
    return attempt


def _topic_metadata_error(config: dict[str, str], topic: str) -> KafkaError | None:
    consumer = Consumer({**config, "group.id": "metadata", "logger": _LOG})
    try:
        return consumer.list_topics(topic, timeout=_WAIT_S).topics[topic].error
    finally:
        consumer.close()


def _assert_refused(client: str, attempt: Attempt, kafka: SecuredKafka, topic: str, *, write: bool) -> None:
    """Assert the refusal each kind of client must get (and that nothing was written or read)."""
    assert attempt.records == 0
    if write:
        (error,) = attempt.delivery
        assert error is not None
    if client == "no credentials":
        # The SASL listener closes a connection that does not start with a SASL handshake.
        assert attempt.error_codes() & {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}, attempt.errors
        assert KafkaError._AUTHENTICATION not in attempt.error_codes()
        if write:
            assert error.code() == KafkaError._MSG_TIMED_OUT
    elif client == "wrong password":
        assert KafkaError._AUTHENTICATION in attempt.error_codes(), attempt.errors
        assert any("invalid credentials" in e.str() for e in attempt.errors), attempt.errors
        if write:
            assert error.code() == KafkaError._MSG_TIMED_OUT
    else:  # authenticated, but no ACL allows it
        assert not attempt.errors, attempt.errors
        if write:
            assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
        else:
            # Fetching in the joiners' group: its offsets and the topic are both refused.
            denied = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED}
            assert attempt.poll_errors and {e.code() for e in attempt.poll_errors} <= denied, (
                attempt.poll_errors
            )
            metadata_error = _topic_metadata_error(_config(kafka, client), topic)
            assert (
                metadata_error is not None and metadata_error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            )


@pytest.mark.parametrize("client", CLIENTS)
def test_cannot_read_the_results(client: str, secured: tuple[SecuredKafka, SecuredNames]) -> None:
    kafka, names = secured
    attempt = _read(_config(kafka, client), names.output, names.group)
    _assert_refused(client, attempt, kafka, names.output, write=False)


@pytest.mark.parametrize("client", CLIENTS)
def test_cannot_write_the_registry_log(client: str, secured: tuple[SecuredKafka, SecuredNames]) -> None:
    kafka, _ = secured
    attempt = _produce(_config(kafka, client), DEFAULT_REGISTRY_TOPIC)
    _assert_refused(client, attempt, kafka, DEFAULT_REGISTRY_TOPIC, write=True)


@pytest.mark.parametrize("client", CLIENTS)
def test_cannot_write_an_input(client: str, secured: tuple[SecuredKafka, SecuredNames]) -> None:
    kafka, names = secured
    attempt = _produce(_config(kafka, client), names.inputs["a"])
    _assert_refused(client, attempt, kafka, names.inputs["a"], write=True)


def test_the_streamjoin_user_reads_results_and_writes_the_registry_but_not_the_inputs(
    secured: tuple[SecuredKafka, SecuredNames],
) -> None:
    """The refusals above are the ACLs', not a broken set-up: the services' user gets what it needs."""
    kafka, names = secured
    config = _config(kafka, "streamjoin")
    assert _read(config, names.output, names.group).records == 1
    assert _produce(config, DEFAULT_REGISTRY_TOPIC).delivery == [None]
    (refused,) = _produce(config, names.inputs["a"]).delivery
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin = Admin(kafka.bootstrap, client_config=kafka.security.librdkafka("admin"))
    assert names.output in admin.topics()
