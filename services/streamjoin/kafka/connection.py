"""Where the brokers are and the security options every Kafka client of a process connects with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streamjoin.client_security import aiokafka_options, librdkafka_options
from streamjoin.settings import Settings

__all__ = ["KafkaClients"]


@dataclass(frozen=True, slots=True)
class KafkaClients:
    """Where the brokers are and how every client of a process connects to them (TLS, SASL).

    Built once per process: `aiokafka_options` loads the TLS files into an `ssl.SSLContext`.

    >>> KafkaClients("localhost:9092").librdkafka
    {}
    """

    bootstrap: str
    aiokafka: Mapping[str, Any] = field(default_factory=dict)
    """Extra consumer keyword arguments (`streamjoin.client_security.aiokafka_options`)."""
    librdkafka: Mapping[str, str] = field(default_factory=dict)
    """Extra producer/admin configuration (`streamjoin.client_security.librdkafka_options`)."""
    listed_ends_exact: bool = True
    """The brokers list a partition's end exactly (`Settings.kafka_listed_ends_exact`; see `end_offsets`)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> KafkaClients:
        """Return the connection of `settings` (`STREAMJOIN_KAFKA_*`)."""
        return cls(
            settings.kafka_bootstrap,
            aiokafka_options(settings),
            librdkafka_options(settings),
            listed_ends_exact=settings.kafka_listed_ends_exact,
        )
