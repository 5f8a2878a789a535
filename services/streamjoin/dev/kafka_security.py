"""SASL/SCRAM and ACLs on the embedded Apache Kafka node: `KafkaBroker(security=KafkaSecurity(...))`.

With a `KafkaSecurity`, the node's client listener is `SASL_PLAINTEXT` and accepts only SCRAM logins
of its users, whose credentials `kafka-storage format --add-scram` writes into the metadata log
before the node first starts. The StandardAuthorizer then denies whatever no ACL allows
(`allow.everyone.if.no.acl.found=false`) to everyone but the admin, the only super user; ACLs are
created through the admin API as the admin (`Admin.create_acls`).

The node's own connections authenticate as the admin too, without TLS on loopback:

- inter-broker traffic uses the client listener (SCRAM);
- the controller listener uses SASL PLAIN with the admin's credentials in the node's configuration.
  It cannot use SCRAM (the controller serves the metadata log the credentials live in), and it
  cannot stay PLAINTEXT: the StandardAuthorizer needs the brokers' principal on it to be a super
  user, and on PLAINTEXT that principal is `User:ANONYMOUS`, i.e. anyone reaching the port.
  PLAIN sends the admin's password in clear over loopback; SCRAM never sends a password.

The configuration file (readable by its owner only) and the format command's arguments hold the
passwords: this is for tests and laptops (production brokers: docs/deploy.md, "Kafka security").

>>> security = KafkaSecurity.generate("streamjoin")
>>> security.user("streamjoin").principal
'User:streamjoin'
>>> sorted(security.client_env("streamjoin"))[:2]
['STREAMJOIN_KAFKA_SASL_MECHANISM', 'STREAMJOIN_KAFKA_SASL_PASSWORD']
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from streamjoin.client_security import jaas_config, librdkafka_sasl
from streamjoin.settings import ENV_PREFIX

__all__ = ["CLIENT_LISTENER", "KafkaSecurity", "KafkaUser", "ScramMechanism", "SecuredKafka"]

ScramMechanism: TypeAlias = Literal["SCRAM-SHA-256", "SCRAM-SHA-512"]

CLIENT_LISTENER = "SASL_PLAINTEXT"
"""The name (and protocol) of the clients' listener of a secured node."""

# What `--add-scram 'MECHANISM=[name=...,password=...]'` and a JAAS value take without quoting.
_SAFE = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class KafkaUser:
    """A SASL user of the node: its name and password."""

    name: str
    password: str = field(repr=False)

    def __post_init__(self) -> None:
        for what, value in (("name", self.name), ("password", self.password)):
            if not _SAFE.fullmatch(value):
                raise ValueError(f"a Kafka user's {what} must match [A-Za-z0-9._-]+")

    @property
    def principal(self) -> str:
        """Its principal in ACLs: `User:<name>`."""
        return f"User:{self.name}"


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    """The SCRAM users of a secured node: an admin (the super user) and the others."""

    admin: KafkaUser
    users: tuple[KafkaUser, ...] = ()
    mechanism: ScramMechanism = "SCRAM-SHA-512"

    @classmethod
    def generate(cls, *names: str, mechanism: ScramMechanism = "SCRAM-SHA-512") -> KafkaSecurity:
        """Return an admin and the users `names`, each with a random password."""
        return cls(
            KafkaUser("admin", secrets.token_hex(16)),
            tuple(KafkaUser(name, secrets.token_hex(16)) for name in names),
            mechanism,
        )

    def user(self, name: str) -> KafkaUser:
        """Return the user (or the admin) called `name`."""
        for user in (self.admin, *self.users):
            if user.name == name:
                return user
        raise KeyError(f"no Kafka user {name!r}")

    def listener_properties(self, host: str, port: int, controller_port: int) -> dict[str, str]:
        """Return the node's listeners and security settings (module docstring)."""
        admin = self.admin
        scram_jaas = jaas_config(self.mechanism, admin.name, admin.password)
        plain_jaas = jaas_config("PLAIN", admin.name, admin.password).removesuffix(";")
        listener = CLIENT_LISTENER.lower()
        return {
            "listeners": f"{CLIENT_LISTENER}://{host}:{port},CONTROLLER://{host}:{controller_port}",
            "advertised.listeners": f"{CLIENT_LISTENER}://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": CLIENT_LISTENER,
            "listener.security.protocol.map": f"{CLIENT_LISTENER}:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            f"listener.name.{listener}.sasl.enabled.mechanisms": self.mechanism,
            "sasl.mechanism.inter.broker.protocol": self.mechanism,
            f"listener.name.{listener}.{self.mechanism.lower()}.sasl.jaas.config": scram_jaas,
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            # The controller checks PLAIN logins against its `user_<name>` options.
            "listener.name.controller.plain.sasl.jaas.config": (
                f'{plain_jaas} user_{admin.name}="{admin.password}";'
            ),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": admin.principal,
            "allow.everyone.if.no.acl.found": "false",
        }

    def format_arguments(self) -> tuple[str, ...]:
        """Return the `kafka-storage format` arguments that create every user's SCRAM credential."""
        return tuple(
            argument
            for user in (self.admin, *self.users)
            for argument in ("--add-scram", f"{self.mechanism}=[name={user.name},password={user.password}]")
        )

    def librdkafka(self, name: str) -> dict[str, str]:
        """Return the security properties of a confluent-kafka client logging in as `name`."""
        user = self.user(name)
        return {
            "security.protocol": CLIENT_LISTENER,
            **librdkafka_sasl(self.mechanism, user.name, user.password),
        }

    def client_env(self, name: str) -> dict[str, str]:
        """Return the `STREAMJOIN_KAFKA_*` variables of a streamjoin service logging in as `name`."""
        user = self.user(name)
        return {
            f"{ENV_PREFIX}KAFKA_SECURITY_PROTOCOL": CLIENT_LISTENER,
            f"{ENV_PREFIX}KAFKA_SASL_MECHANISM": self.mechanism,
            f"{ENV_PREFIX}KAFKA_SASL_USERNAME": user.name,
            f"{ENV_PREFIX}KAFKA_SASL_PASSWORD": user.password,
        }


@dataclass(frozen=True, slots=True)
class SecuredKafka:
    """A running secured node, as the `secured_kafka` fixture gives it: where, and who may log in."""

    bootstrap: str
    security: KafkaSecurity

    def client_config(self, name: str) -> dict[str, str]:
        """Return a confluent-kafka configuration logging in as `name` (bootstrap included)."""
        return {"bootstrap.servers": self.bootstrap, **self.security.librdkafka(name)}

    def env(self, name: str) -> Mapping[str, str]:
        """Return the `STREAMJOIN_KAFKA_*` environment of a service logging in as `name`."""
        return {f"{ENV_PREFIX}KAFKA_BOOTSTRAP": self.bootstrap, **self.security.client_env(name)}
