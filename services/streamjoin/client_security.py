"""The security options of every Kafka and Redis client, derived from the settings in one place.

The `STREAMJOIN_KAFKA_SECURITY_PROTOCOL`, `..._SASL_*`, `..._TLS_*_FILE` and `STREAMJOIN_REDIS_TLS_CA_FILE`
settings (settings.py) become the options of each client library the product uses:

- `aiokafka_options`: keyword arguments of `AIOKafkaConsumer`/`AIOKafkaProducer` (and, through
  `faust.SASLCredentials`/`faust.SSLCredentials`, of Faust);
- `librdkafka_options`: a confluent-kafka (librdkafka) configuration dict;
- `spark_kafka_options`: the Java client's options, prefixed `kafka.` for Spark's Kafka source/sink;
- `redis_options`: keyword arguments of `redis.asyncio.Redis.from_url`.

With the default (PLAINTEXT, `redis://`), every function returns an empty dict, so the clients are
built exactly as without these settings. Only the standard library is imported here (no client
library), so any package may use it.

>>> from streamjoin.settings import load_settings
>>> aiokafka_options(load_settings()), librdkafka_options(load_settings()), redis_options(load_settings())
({}, {}, {})
>>> sasl = load_settings(kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_mechanism="SCRAM-SHA-512",
...                      kafka_sasl_username="sj", kafka_sasl_password='p"w')
>>> librdkafka_options(sasl)["sasl.mechanisms"]
'SCRAM-SHA-512'
>>> spark_kafka_options(sasl)["kafka.sasl.jaas.config"]
'org.apache.kafka.common.security.scram.ScramLoginModule required username="sj" password="p\\\\"w";'
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from streamjoin.settings import Settings

__all__ = [
    "aiokafka_options",
    "jaas_config",
    "kafka_ssl_context",
    "librdkafka_options",
    "librdkafka_sasl",
    "redis_options",
    "spark_kafka_options",
]

_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def _uses_tls(settings: Settings) -> bool:
    return settings.kafka_security_protocol in ("SSL", "SASL_SSL")


def _uses_sasl(settings: Settings) -> bool:
    return settings.kafka_security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def _password(settings: Settings) -> str:
    secret = settings.kafka_sasl_password
    return secret.get_secret_value() if secret is not None else ""


def kafka_ssl_context(settings: Settings) -> ssl.SSLContext | None:
    """Return the TLS context of the brokers (None unless SSL or SASL_SSL).

    It verifies the brokers' certificates and host names against `STREAMJOIN_KAFKA_TLS_CA_FILE` (the
    system's CAs when unset) and presents the client certificate of `..._TLS_CERT_FILE`/`_KEY_FILE`.
    """
    if not _uses_tls(settings):
        return None
    ca = settings.kafka_tls_ca_file
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca) if ca else None)
    if settings.kafka_tls_cert_file is not None and settings.kafka_tls_key_file is not None:
        context.load_cert_chain(str(settings.kafka_tls_cert_file), str(settings.kafka_tls_key_file))
    return context


def aiokafka_options(settings: Settings) -> dict[str, Any]:
    """Return the security keyword arguments of an aiokafka client (empty for PLAINTEXT).

    Build it once per process where possible: each call loads the TLS files into a new `SSLContext`.
    """
    protocol = settings.kafka_security_protocol
    if protocol == "PLAINTEXT":
        return {}
    options: dict[str, Any] = {"security_protocol": protocol}
    if _uses_sasl(settings):
        options.update(
            sasl_mechanism=settings.kafka_sasl_mechanism,
            sasl_plain_username=settings.kafka_sasl_username,
            sasl_plain_password=_password(settings),
        )
    context = kafka_ssl_context(settings)
    if context is not None:
        options["ssl_context"] = context
    return options


def librdkafka_options(settings: Settings) -> dict[str, str]:
    """Return the security properties of a confluent-kafka client (empty for PLAINTEXT)."""
    protocol = settings.kafka_security_protocol
    if protocol == "PLAINTEXT":
        return {}
    options: dict[str, str] = {"security.protocol": protocol}
    if _uses_sasl(settings):
        options.update(
            librdkafka_sasl(
                str(settings.kafka_sasl_mechanism), str(settings.kafka_sasl_username), _password(settings)
            )
        )
    if _uses_tls(settings):
        for key, path in (
            ("ssl.ca.location", settings.kafka_tls_ca_file),
            ("ssl.certificate.location", settings.kafka_tls_cert_file),
            ("ssl.key.location", settings.kafka_tls_key_file),
        ):
            if path is not None:
                options[key] = str(path)
    return options


def librdkafka_sasl(mechanism: str, username: str, password: str) -> dict[str, str]:
    """Return librdkafka's SASL login properties (with `security.protocol` SASL_PLAINTEXT or SASL_SSL)."""
    return {"sasl.mechanisms": mechanism, "sasl.username": username, "sasl.password": password}


def jaas_config(mechanism: str, username: str, password: str) -> str:
    """Return Kafka's `sasl.jaas.config` for PLAIN or SCRAM, quoting the user name and password.

    >>> jaas_config("PLAIN", "a\\\\b", "x")
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="a\\\\\\\\b" password="x";'
    """
    module = _JAAS_MODULES.get(mechanism)
    if module is None:
        raise ValueError(f"no JAAS login module for SASL mechanism {mechanism!r}")
    return f"{module} required username={_jaas_quote(username)} password={_jaas_quote(password)};"


def _jaas_quote(value: str) -> str:
    """Quote a JAAS option value: Kafka's parser (a `StreamTokenizer`) reads backslash escapes."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def spark_kafka_options(settings: Settings) -> dict[str, str]:
    """Return the Java Kafka client's security options with the `kafka.` prefix Spark's source and sink use.

    The CA file becomes a PEM trust store (Kafka 2.7+). The client certificate and key become a PEM
    key store given inline (`ssl.keystore.certificate.chain`, `ssl.keystore.key`: the Java client takes
    a PEM key store file only with key and chain in one file); the key must be unencrypted PKCS#8
    (`-----BEGIN PRIVATE KEY-----`). The values hold secrets: do not log them.
    """
    protocol = settings.kafka_security_protocol
    if protocol == "PLAINTEXT":
        return {}
    options: dict[str, str] = {"security.protocol": protocol}
    if _uses_sasl(settings):
        mechanism = str(settings.kafka_sasl_mechanism)
        options["sasl.mechanism"] = mechanism
        options["sasl.jaas.config"] = jaas_config(
            mechanism, str(settings.kafka_sasl_username), _password(settings)
        )
    if _uses_tls(settings):
        if settings.kafka_tls_ca_file is not None:
            options["ssl.truststore.type"] = "PEM"
            options["ssl.truststore.location"] = str(settings.kafka_tls_ca_file)
        if settings.kafka_tls_cert_file is not None and settings.kafka_tls_key_file is not None:
            options["ssl.keystore.type"] = "PEM"
            options["ssl.keystore.certificate.chain"] = _read(settings.kafka_tls_cert_file)
            options["ssl.keystore.key"] = _read(settings.kafka_tls_key_file)
    return {f"kafka.{key}": value for key, value in options.items()}


def _read(path: Path) -> str:
    return path.read_text(encoding="ascii").strip()


def redis_options(settings: Settings) -> dict[str, Any]:
    """Return the security keyword arguments of `redis.asyncio.Redis.from_url` (empty unless needed).

    A `rediss://` URL alone verifies Redis's certificate against the system's CAs;
    `STREAMJOIN_REDIS_TLS_CA_FILE` names a private CA instead.
    """
    if (
        settings.redis_url.startswith(("rediss://", "rediss+cluster://"))
        and settings.redis_tls_ca_file is not None
    ):
        return {"ssl_ca_certs": str(settings.redis_tls_ca_file)}
    return {}
