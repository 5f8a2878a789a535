"""`streamjoin.client_security` for every protocol, and real clients accepting its options."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient
from tests.pki import Pki

from streamjoin.client_security import (
    aiokafka_options,
    jaas_config,
    kafka_ssl_context,
    librdkafka_options,
    redis_options,
    spark_kafka_options,
)
from streamjoin.settings import Settings, load_settings

PASSWORD = 'pa"ss\\word'
SASL = {"kafka_sasl_username": "streamjoin", "kafka_sasl_password": PASSWORD}


def sasl_ssl(pki: Pki, mechanism: str = "SCRAM-SHA-512", *, mutual: bool = True) -> Settings:
    client = {"kafka_tls_cert_file": pki.client_cert, "kafka_tls_key_file": pki.client_key} if mutual else {}
    return load_settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism=mechanism,
        kafka_tls_ca_file=pki.ca_cert,
        **SASL,
        **client,
    )


def test_plaintext_adds_nothing_to_any_client() -> None:
    """The default must build every client exactly as before (the embedded stack, compose)."""
    settings = load_settings(redis_url="redis://127.0.0.1:6379/0")
    assert kafka_ssl_context(settings) is None
    assert aiokafka_options(settings) == {}
    assert librdkafka_options(settings) == {}
    assert spark_kafka_options(settings) == {}
    assert redis_options(settings) == {}


def test_ssl_with_a_private_ca(pki: Pki) -> None:
    settings = load_settings(kafka_security_protocol="SSL", kafka_tls_ca_file=pki.ca_cert)
    options = aiokafka_options(settings)
    assert set(options) == {"security_protocol", "ssl_context"} and options["security_protocol"] == "SSL"
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert any(c["subject"] == ((("commonName", "streamjoin test CA"),),) for c in context.get_ca_certs())
    assert librdkafka_options(settings) == {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_cert)}
    assert spark_kafka_options(settings) == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(pki.ca_cert),
    }


def test_ssl_with_the_system_cas() -> None:
    settings = load_settings(kafka_security_protocol="SSL")
    assert aiokafka_options(settings)["ssl_context"].verify_mode == ssl.CERT_REQUIRED
    assert librdkafka_options(settings) == {"security.protocol": "SSL"}
    assert spark_kafka_options(settings) == {"kafka.security.protocol": "SSL"}


def test_mutual_tls(pki: Pki) -> None:
    settings = load_settings(
        kafka_security_protocol="SSL",
        kafka_tls_ca_file=pki.ca_cert,
        kafka_tls_cert_file=pki.client_cert,
        kafka_tls_key_file=pki.client_key,
    )
    assert kafka_ssl_context(settings) is not None
    assert librdkafka_options(settings) == {
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca_cert),
        "ssl.certificate.location": str(pki.client_cert),
        "ssl.key.location": str(pki.client_key),
    }
    spark = spark_kafka_options(settings)
    assert spark["kafka.ssl.keystore.type"] == "PEM"
    assert spark["kafka.ssl.keystore.certificate.chain"].startswith("-----BEGIN CERTIFICATE-----")
    assert spark["kafka.ssl.keystore.key"].startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8, as Java needs


def test_a_key_that_does_not_match_the_certificate_fails_at_start_up(pki: Pki) -> None:
    settings = load_settings(
        kafka_security_protocol="SSL", kafka_tls_cert_file=pki.client_cert, kafka_tls_key_file=pki.server_key
    )
    with pytest.raises(ssl.SSLError, match="KEY_VALUES_MISMATCH"):
        aiokafka_options(settings)


@pytest.mark.parametrize(
    ("mechanism", "module"),
    [
        ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule"),
        ("SCRAM-SHA-256", "org.apache.kafka.common.security.scram.ScramLoginModule"),
        ("SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule"),
    ],
)
def test_sasl_plaintext(mechanism: str, module: str) -> None:
    settings = load_settings(kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_mechanism=mechanism, **SASL)
    assert aiokafka_options(settings) == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "streamjoin",
        "sasl_plain_password": PASSWORD,
    }
    assert librdkafka_options(settings) == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        "sasl.username": "streamjoin",
        "sasl.password": PASSWORD,
    }
    assert spark_kafka_options(settings) == {
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": mechanism,
        "kafka.sasl.jaas.config": f'{module} required username="streamjoin" password="pa\\"ss\\\\word";',
    }


def test_sasl_ssl(pki: Pki) -> None:
    settings = sasl_ssl(pki, mutual=False)
    options = aiokafka_options(settings)
    assert isinstance(options.pop("ssl_context"), ssl.SSLContext)
    assert options == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "streamjoin",
        "sasl_plain_password": PASSWORD,
    }
    assert librdkafka_options(settings) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "streamjoin",
        "sasl.password": PASSWORD,
        "ssl.ca.location": str(pki.ca_cert),
    }
    spark = spark_kafka_options(settings)
    assert spark["kafka.security.protocol"] == "SASL_SSL" and spark["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert spark["kafka.ssl.truststore.location"] == str(pki.ca_cert)
    assert "ScramLoginModule required" in spark["kafka.sasl.jaas.config"]


@pytest.mark.parametrize(
    ("username", "password", "quoted"),
    [
        ("u", "p", 'username="u" password="p";'),
        ('a"b', "p", 'username="a\\"b" password="p";'),
        ("u", "back\\slash", 'username="u" password="back\\\\slash";'),
        ("u", 'tail\\"', 'username="u" password="tail\\\\\\"";'),
        ("u", "semi;colon = x", 'username="u" password="semi;colon = x";'),
    ],
)
def test_jaas_values_are_quoted(username: str, password: str, quoted: str) -> None:
    config = jaas_config("PLAIN", username, password)
    assert config == f"org.apache.kafka.common.security.plain.PlainLoginModule required {quoted}"
    assert _jaas_unquote(config.split("password=", 1)[1][:-1]) == password


def _jaas_unquote(token: str) -> str:
    """Read one quoted value as Java's StreamTokenizer (Kafka's JaasConfig parser) does."""
    assert token[0] == token[-1] == '"'
    out, chars = [], iter(token[1:-1])
    for char in chars:
        out.append(next(chars) if char == "\\" else char)
    return "".join(out)


def test_jaas_refuses_an_unknown_mechanism() -> None:
    with pytest.raises(ValueError, match="GSSAPI"):
        jaas_config("GSSAPI", "u", "p")


def test_redis_options(pki: Pki) -> None:
    with_ca = load_settings(redis_url="rediss://redis:6380/0", redis_tls_ca_file=pki.ca_cert)
    assert redis_options(with_ca) == {"ssl_ca_certs": str(pki.ca_cert)}
    assert redis_options(load_settings(redis_url="rediss://redis:6380/0")) == {}  # the system's CAs
    assert redis_options(load_settings(redis_url="redis://redis:6379/0")) == {}


# Real clients: a misspelt key or a bad value fails their constructors.


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_accepts_the_sasl_ssl_configuration(pki: Pki, mechanism: str) -> None:
    security = librdkafka_options(sasl_ssl(pki, mechanism))
    config: dict[str, Any] = {"bootstrap.servers": "127.0.0.1:1", **security}
    producer = Producer(config)
    assert producer.flush(0) == 0
    AdminClient(config)


def test_confluent_kafka_would_refuse_a_misspelt_key(pki: Pki) -> None:
    """What the test above guards against: librdkafka checks names and files at construction."""
    with pytest.raises(KafkaException, match="No such configuration property"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "sasl.mechanismz": "PLAIN"})
    with pytest.raises(KafkaException, match=r"ssl\.ca\.location"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL", "ssl.ca.location": "/nope"})


def test_aiokafka_accepts_the_sasl_ssl_configuration(pki: Pki) -> None:
    options = aiokafka_options(sasl_ssl(pki))

    async def build() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", group_id=None, **options)
        producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", **options)
        assert consumer._client._security_protocol == "SASL_SSL"
        assert consumer._client._sasl_mechanism == "SCRAM-SHA-512"
        await producer.stop()
        await consumer.stop()

    asyncio.run(build())


def test_faust_credentials_built_from_the_options_give_back_the_same_options(pki: Pki) -> None:
    """The joiner's Faust `broker_credentials` connect exactly like its own aiokafka consumers."""
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

    from streamjoin.joiner.group.app import broker_credentials
    from streamjoin.kafka import KafkaClients

    ssl_only = load_settings(kafka_security_protocol="SSL", kafka_tls_ca_file=pki.ca_cert)
    for settings in (sasl_ssl(pki), ssl_only):
        kafka = KafkaClients.from_settings(settings)
        credentials = broker_credentials(kafka)
        assert credentials is not None
        assert credentials_to_aiokafka_auth(credentials) == kafka.aiokafka
    assert broker_credentials(KafkaClients.from_settings(load_settings())) is None
