"""`KafkaSecurity`: the secured node's settings and format arguments, without starting it (unit)."""

from __future__ import annotations

import pytest

from streamjoin.client_security import librdkafka_options
from streamjoin.dev.kafka_security import KafkaSecurity, KafkaUser, SecuredKafka
from streamjoin.settings import load_settings


def test_only_the_admin_is_a_super_user_and_nothing_is_allowed_without_an_acl() -> None:
    security = KafkaSecurity.generate("streamjoin")
    config = security.listener_properties("127.0.0.1", 9092, 9093)
    assert config["super.users"] == "User:admin"
    assert config["allow.everyone.if.no.acl.found"] == "false"
    assert config["authorizer.class.name"].endswith("StandardAuthorizer")
    # Every listener authenticates: none is PLAINTEXT, whose principal would be User:ANONYMOUS.
    assert (
        config["listener.security.protocol.map"] == "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    )
    assert config["listener.name.sasl_plaintext.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    controller = config["listener.name.controller.plain.sasl.jaas.config"]
    assert f'user_admin="{security.admin.password}"' in controller and controller.endswith(";")
    assert config["advertised.listeners"] == "SASL_PLAINTEXT://127.0.0.1:9092"


def test_every_user_gets_a_scram_credential_at_format_time() -> None:
    security = KafkaSecurity.generate("streamjoin", "other", mechanism="SCRAM-SHA-256")
    arguments = security.format_arguments()
    assert arguments[::2] == ("--add-scram",) * 3
    names = [a.split("name=")[1].split(",")[0] for a in arguments[1::2]]
    assert names == ["admin", "streamjoin", "other"]
    assert all(a.startswith("SCRAM-SHA-256=[") for a in arguments[1::2])
    assert len({u.password for u in (security.admin, *security.users)}) == 3


def test_a_services_environment_gives_the_same_client_settings_as_the_fixtures_config() -> None:
    kafka = SecuredKafka("127.0.0.1:9092", KafkaSecurity.generate("streamjoin"))
    env = kafka.env("streamjoin")
    settings = load_settings(**{k.removeprefix("STREAMJOIN_").lower(): v for k, v in env.items()})
    assert {
        "bootstrap.servers": settings.kafka_bootstrap,
        **librdkafka_options(settings),
    } == kafka.client_config("streamjoin")


@pytest.mark.parametrize("password", ["a,b", "x]y", 'q"', ""])
def test_a_password_the_format_tool_would_misread_is_refused(password: str) -> None:
    with pytest.raises(ValueError, match="password"):
        KafkaUser("u", password)
    with pytest.raises(KeyError, match="nobody"):
        KafkaSecurity.generate().user("nobody")
