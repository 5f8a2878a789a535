"""The registry log's backends: the compacted Kafka topic (production) and memory (unit tests).

>>> import asyncio
>>> log = MemoryRegistryLog()
>>> asyncio.run(log.append([LogEntry.tombstone("p:", "query", "q").at(2)]))
>>> asyncio.run(log.read())
[LogEntry(key='p:query:q', value=None, version=2, mac=None)]
"""

from __future__ import annotations

from collections.abc import Sequence

from streamjoin.kafka import KafkaClients, KeyedLog, LogRecord
from streamjoin.registry.log import VERSION_HEADER, LogEntry
from streamjoin.registry.signing import MAC_HEADER
from streamjoin.settings import Settings

__all__ = ["DEFAULT_REGISTRY_TOPIC", "KafkaRegistryLog", "MemoryRegistryLog"]

DEFAULT_REGISTRY_TOPIC = "streamjoin.registry"


class KafkaRegistryLog:
    """The registry log on a compacted topic (`topics/topics.json`: `streamjoin.registry`)."""

    def __init__(
        self,
        kafka: KafkaClients,
        topic: str = DEFAULT_REGISTRY_TOPIC,
        *,
        timeout_ms: int = 10_000,
        require_topic: bool = False,
    ) -> None:
        """Append to and read `topic` on the brokers of `kafka`; `require_topic`: a missing topic is an
        error (`LookupError`), not an empty log (a misnamed topic must not restore an empty registry)."""
        self.topic = topic
        self._log = KeyedLog(kafka, topic, timeout_ms=timeout_ms)
        self._require = require_topic

    @classmethod
    def from_settings(
        cls, settings: Settings, topic: str = DEFAULT_REGISTRY_TOPIC, *, require_topic: bool = False
    ) -> KafkaRegistryLog:
        """Return the log on the brokers of `settings` (with their TLS and SASL options)."""
        return cls(KafkaClients.from_settings(settings), topic, require_topic=require_topic)

    async def append(self, entries: Sequence[LogEntry]) -> None:
        """Write `entries` in order; return once every in-sync replica has them.

        Raises `streamjoin.kafka.LogAppendError` when the broker did not acknowledge them.
        """
        await self._log.append(
            [
                LogRecord(
                    key=e.key,
                    value=e.value.encode() if e.value is not None else None,
                    headers={VERSION_HEADER: str(e.version)} | ({MAC_HEADER: e.mac} if e.mac else {}),
                )
                for e in entries
            ]
        )

    async def read(self) -> list[LogEntry]:
        """Return every retained entry of the topic, in offset order per partition.

        Whatever a record holds is read, never raised on: a value that is not UTF-8 or a version that
        is not a number makes an entry whose MAC cannot match (and that is no entity), which the
        restore refuses and reports.
        """
        return [
            LogEntry(
                r.key,
                r.value.decode(errors="replace") if r.value is not None else None,
                _version(r.headers.get(VERSION_HEADER)),
                r.headers.get(MAC_HEADER),
            )
            for r in await self._log.read_all(missing_ok=not self._require)
        ]

    def close(self) -> None:
        """Flush and close the producer."""
        self._log.close()


def _version(header: str | None) -> int:
    """Return the version a record's header gives; -1 when it gives none that is a number."""
    if header is None:
        return 0  # a record written without one
    try:
        return int(header)
    except ValueError:
        return -1


class MemoryRegistryLog:
    """A registry log in a list: the unit-test double of `KafkaRegistryLog`."""

    def __init__(self) -> None:
        """Start empty."""
        self.entries: list[LogEntry] = []

    async def append(self, entries: Sequence[LogEntry]) -> None:
        """Keep `entries`."""
        self.entries.extend(entries)

    async def read(self) -> list[LogEntry]:
        """Return every entry appended."""
        return list(self.entries)

    def close(self) -> None:
        """Nothing to close."""
