"""docker-compose.yml's Kafka requires SASL/SCRAM, and every service logs in with the same user.

No Docker engine here: the compose file's settings are checked as written, and its Kafka node runs
for real: `deploy/kafka/server.properties` (moved to free loopback ports) is formatted with the
`--add-scram` argument of the `kafka` service's command and started with the embedded stack's Kafka
jars (4.1; the image is 3.9, whose configuration keys these are too). Clients then log in through
its two SASL listeners, and are refused without the password or with a wrong one.
"""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from streamjoin.dev.jars import classpath, java_executable
from streamjoin.dev.kafka_broker import MetadataProbe, kafka_available
from streamjoin.dev.ports import LOOPBACK, free_port
from streamjoin.dev.process import ManagedProcess
from streamjoin.kafka import Admin
from streamjoin.settings import Settings
from streamjoin.topics import TopicSpec, create_topics

from .dashboards import REPO_ROOT
from .test_compose import SECRETS, interpolate, product_services

PROPERTIES = REPO_ROOT / "deploy" / "kafka" / "server.properties"
MOUNTED_AT = "/etc/streamjoin/kafka/server.properties"
PASSWORD_VARIABLE = "STREAMJOIN_KAFKA_SASL_PASSWORD"


def _kafka_script(compose: dict[str, Any]) -> str:
    command = compose["services"]["kafka"]["command"]
    assert command[:2] == ["sh", "-c"], command
    script: str = command[2]
    return script


def _format_arguments(compose: dict[str, Any], password: str) -> list[str]:
    """The `kafka-storage.sh format` arguments of the kafka service, as its shell would expand them."""
    environment = {**compose["services"]["kafka"]["environment"], PASSWORD_VARIABLE: password}
    script = _kafka_script(compose).replace("$$", "$")
    fmt = shlex.split(script.split("&&")[0])
    assert fmt[:2] == ["/opt/kafka/bin/kafka-storage.sh", "format"], fmt
    return [re.sub(r"\$(\w+)", lambda m: str(environment[m.group(1)]), a) for a in fmt[2:]]


def test_every_service_logs_in_as_the_scram_user_the_broker_creates(compose: dict[str, Any]) -> None:
    arguments = _format_arguments(compose, "pw")
    scram = arguments[arguments.index("--add-scram") + 1]
    found = re.fullmatch(r"(SCRAM-SHA-\d+)=\[name=(\w+),password=pw\]", scram)
    assert found, scram
    mechanism, user = found.groups()
    assert arguments[arguments.index("--config") + 1] == MOUNTED_AT
    mounts = dict(v.split(":")[:2][::-1] for v in compose["services"]["kafka"]["volumes"])
    assert (REPO_ROOT / mounts[MOUNTED_AT]).resolve() == PROPERTIES.resolve()
    for name in product_services(compose):
        env = {k: interpolate(str(v), SECRETS) for k, v in compose["services"][name]["environment"].items()}
        assert env["STREAMJOIN_KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT", name
        assert (env["STREAMJOIN_KAFKA_SASL_MECHANISM"], env["STREAMJOIN_KAFKA_SASL_USERNAME"]) == (
            mechanism,
            user,
        )
        assert env[PASSWORD_VARIABLE] == SECRETS[PASSWORD_VARIABLE], name
        settings = Settings.model_validate({k.removeprefix("STREAMJOIN_").lower(): v for k, v in env.items()})
        assert (
            settings.kafka_sasl_password is not None
            and settings.kafka_sasl_password.get_secret_value() == "pw"
        )


def test_the_password_is_required_and_in_no_file(compose: dict[str, Any]) -> None:
    kafka = compose["services"]["kafka"]["environment"][PASSWORD_VARIABLE]
    assert kafka.startswith(f"${{{PASSWORD_VARIABLE}:?"), kafka
    with pytest.raises(KeyError, match=PASSWORD_VARIABLE):
        interpolate(kafka, {})
    assert "password" not in PROPERTIES.read_text().replace("sasl.jaas.config", "")


def test_kafka_listeners_outside_the_container_all_require_sasl() -> None:
    config = _properties(PROPERTIES.read_text())
    protocols = dict(p.split(":") for p in config["listener.security.protocol.map"].split(","))
    for listener in config["listeners"].split(","):
        name, _, address = listener.partition("://")
        host = address.rpartition(":")[0]
        assert protocols[name].startswith("SASL_") or host == "localhost", listener
    assert config["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"


def _properties(text: str) -> dict[str, str]:
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def _on_loopback(text: str, ports: dict[int, int], data: Path) -> str:
    """The compose node's configuration with every listener moved to 127.0.0.1 and a free port."""

    def move(match: re.Match[str]) -> str:
        return f"{match.group(1)}{LOOPBACK}:{ports[int(match.group(3))]}"

    text = re.sub(r"(://|@)([\w.-]*):(\d+)", move, text)
    return text.replace("log.dirs=/var/lib/kafka/data", f"log.dirs={data}")


class _ComposeKafka:
    """The compose file's Kafka node on this machine: its listeners' loopback addresses by name."""

    def __init__(self, compose: dict[str, Any], workdir: Path, password: str) -> None:
        self.ports = {port: free_port() for port in (9092, 29092, 9093, 9094)}
        properties = workdir / "server.properties"
        properties.write_text(_on_loopback(PROPERTIES.read_text(), self.ports, workdir / "data"))
        java = [
            java_executable(),
            "-Xmx512m",
            "-Djava.net.preferIPv4Stack=true",
            "-cp",
            f"{classpath('kafka')}/*",
        ]
        arguments = _format_arguments(compose, password)
        arguments[arguments.index("--config") + 1] = str(properties)
        formatter = ManagedProcess("format", [*java, "kafka.tools.StorageTool", "format", *arguments],
                                   log_path=workdir / "format.log")  # fmt: skip
        formatter.start()
        assert formatter.wait_exit(timeout_ms=120_000) == 0, formatter.log_tail()
        self.process = ManagedProcess(
            "kafka", [*java, "kafka.Kafka", str(properties)], log_path=workdir / "kafka.log"
        )

    def address(self, compose_port: int) -> str:
        return f"{LOOPBACK}:{self.ports[compose_port]}"


@pytest.fixture(scope="module")
def compose_kafka(
    compose: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[_ComposeKafka, str]]:
    why_not = kafka_available()
    if why_not is not None:
        pytest.skip(f"Apache Kafka cannot run here: {why_not}")
    password = uuid.uuid4().hex
    node = _ComposeKafka(compose, tmp_path_factory.mktemp("compose-kafka"), password)
    node.process.start()
    try:
        # the health check's way in: the container's own loopback listener, no login
        node.process.wait_ready(MetadataProbe(node.ports[9094]), timeout_ms=180_000)
        yield node, password
    finally:
        node.process.stop()


def _login(password: str) -> dict[str, str]:
    """What the services' settings give librdkafka (`client_security.librdkafka_options`)."""
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "streamjoin",
        "sasl.password": password,
    }


def _scram(address: str, password: str) -> dict[str, str]:
    return {"bootstrap.servers": address, **_login(password)}


def _produce(config: dict[str, str], topic: str) -> tuple[KafkaError | None, set[int]]:
    errors: list[KafkaError] = []
    delivered: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 6_000, "error_cb": errors.append})
    producer.produce(topic, b"{}", on_delivery=lambda err, _msg: delivered.append(err))
    producer.flush(15)
    return delivered[0], {e.code() for e in errors}


@pytest.mark.timeout(300)
def test_the_compose_kafka_takes_scram_logins_only(compose_kafka: tuple[_ComposeKafka, str]) -> None:
    node, password = compose_kafka
    services, host = node.address(9092), node.address(29092)
    topic = f"compose.{uuid.uuid4().hex[:8]}"
    (created,) = create_topics(services, [TopicSpec(topic, "input", 1)], client_config=_login(password))
    assert created.ok, created.message
    for address in (services, host):
        assert _produce(_scram(address, password), topic) == (None, set()), address
        assert topic in Admin(address, client_config=_login(password)).topics()
    refused, errors = _produce({"bootstrap.servers": host}, topic)
    assert refused is not None and refused.code() == KafkaError._MSG_TIMED_OUT
    assert KafkaError._AUTHENTICATION not in errors and errors & {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
    }
    refused, errors = _produce({**_scram(host, password), "sasl.password": "wrong"}, topic)
    assert refused is not None and KafkaError._AUTHENTICATION in errors
