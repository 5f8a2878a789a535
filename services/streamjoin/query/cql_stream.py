"""What the CQL and SQL parsers need of a registered stream: `CqlStream`, and `Stream` to give one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["CqlStream", "Stream"]


class CqlStream(Protocol):
    """What the parser needs of a registered stream."""

    @property
    def topic(self) -> str:
        """The Kafka topic of the stream."""
        ...

    @property
    def timestamp(self) -> str | None:
        """The timestamp field (None: the Kafka record timestamp)."""
        ...

    @property
    def key(self) -> str | None:
        """The field the topic is partitioned by (None: not keyed), carried into the query's input."""
        ...


@dataclass(frozen=True, slots=True)
class Stream:
    """A minimal `CqlStream`, for callers without a registry (tests, the replay CLI)."""

    topic: str
    timestamp: str | None = None
    key: str | None = None
