"""The life cycle of a worker's idempotent producer that is replaced, never used again, once it may
leave a gap: the one the Publisher and the re-keying producer share.

`producer_gaps` says when a producer must send nothing more (`must_replace`) and keeps replaced
ones polled until their callbacks all ran (`RetiredProducers`). This module holds the current
producer, the poll thread that serves its callbacks, the mark that it must be replaced (`broken`,
set from the poll thread), the replacement itself and the bounded close. Only the owner replaces it,
at a point of its choosing (the Publisher before its next publish, the re-keying producer when an
attempt begins), never the poll thread: the records of one publish or attempt all go to one producer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from streamjoin.joiner.publish.producer_gaps import (
    GAPLESS_CONFIG,
    RetiredProducers,
    must_replace,
    poll_producer,
)
from streamjoin.kafka import DeliveryError, KafkaClients, Producer, new_producer

__all__ = ["ReplaceableProducer"]

_log = logging.getLogger(__name__)
_LIBRDKAFKA_LOG = logging.getLogger("streamjoin.joiner.librdkafka")


class ReplaceableProducer:
    """A gapless idempotent producer (`current`), its poll thread, and its replacement (`replace`)."""

    def __init__(self, kafka: KafkaClients, options: Mapping[str, object], *, role: str) -> None:
        """Create the producer for `kafka` with librdkafka `options` and start its poll thread.

        `role` names it in logs and in the poll thread's name (`streamjoin-{role}`), e.g.
        "publisher" or "rekey-producer".
        """
        self.role = role
        self.config: dict[str, object] = {
            **kafka.librdkafka,
            "bootstrap.servers": kafka.bootstrap,
            **options,
            **GAPLESS_CONFIG,  # no record written after a failed one (`producer_gaps`)
            "logger": _LIBRDKAFKA_LOG,
            "error_cb": self._on_error,
        }
        self.current: Producer = new_producer(self.config)
        self.broken = False
        """The current producer must send nothing more (set by the poll thread): `replace` it."""
        self.generation = 0
        """How many times the producer was replaced."""
        self._retired = RetiredProducers()  # replaced ones, polled until their callbacks all ran
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, name=f"streamjoin-{role}", daemon=True)
        self.thread.start()

    def _on_error(self, error: DeliveryError) -> None:
        if error.fatal():  # e.g. the gapless guarantee: this producer sends nothing more
            _log.error("%s fatal error: %s: %s", self.role, error.name(), error.str())
            self.broken = True
        else:
            _log.warning("%s error: %s", self.role, error.str())

    def _poll(self) -> None:
        current, broken = (lambda: self.current), (lambda: self.broken)
        poll_producer(self._stop, current, broken, self._retired, self._failed_fatally)

    def _failed_fatally(self) -> None:
        self.broken = True  # (poll thread) replaced before the next attempt or publish

    def delivery_failed(self, error: DeliveryError, generation: int) -> None:
        """A record sent by the producer of `generation` failed with `error` (poll thread): mark the
        current producer broken if it sent it and must send nothing more. A replaced producer's late
        failures say nothing of the current one."""
        if must_replace(error) and generation == self.generation:
            self.broken = True

    def replace(self) -> None:
        """Make a new producer the current one; the old one's queued records are purged (each fails)
        and its callbacks served until none is left, even those of a record sent before a freeze."""
        old = self.current
        self.broken = False
        self.current = new_producer(self.config)
        self.generation += 1  # before the purge: the old one's late failures must not mark the new one
        self._retired.add(old)
        _log.warning("replaced the %s (fenced by the broker, failed or timed out)", self.role)

    def close(self, timeout_ms: int, what_is_lost: str) -> None:
        """Flush (bounded), purge what is left (logged with `what_is_lost`), stop the poll thread."""
        left = self.current.flush(timeout_ms / 1000)
        if left:
            _log.warning("%s: %d records not delivered at shutdown (%s)", self.role, left, what_is_lost)
            self.current.purge()
        self._stop.set()
        self.thread.join(timeout=1.0)
