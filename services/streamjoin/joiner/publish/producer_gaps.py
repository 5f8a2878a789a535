"""What keeps the worker's idempotent producers (the Publisher's, the re-keying one) from leaving a
gap in a partition: a record missing while later ones of the same producer are written.

Both rely on "no gap" (docs/exactly-once.md): the Publisher's recovery reads the highest `sj-seq`
present in an output partition as "everything before is published", and the operators' duplicate
filter for re-keyed inputs drops a record at or below the highest source offset it saw. librdkafka
leaves a gap in two cases:

- a batch fails with a permanent error (the topic deleted, not authorized, too large): the later
  in-flight batches fail with OUT_OF_ORDER_SEQUENCE_NUMBER, librdkafka resets the producer id and
  writes them again. `enable.gapless.guarantee` turns that into a fatal error instead, which stops
  the producer: it is then replaced (`must_replace`);
- records time out (`message.timeout.ms`, the session timeout here: zombie fencing) while queued:
  librdkafka drains the partition's requests, bumps the producer epoch and sends the records queued
  after them; `enable.gapless.guarantee` does not cover this. The embedded broker refuses a bumped
  producer (PRODUCER_FENCED), Kafka takes it. So after a timed-out record the poll thread purges
  the producer's queue at once (`poll_producer`): the later records fail instead of being sent
  after the bump, and the producer is replaced for the next attempt. librdkafka may send queued
  records between the timeout and the purge (at most one poll interval, 50 ms, after the delivery
  report, while it drains the requests in flight first): narrowed, not closed
  (docs/reliability.md).

A replaced producer is not dropped: its queued records are purged (not those in flight: for a
gapless producer that is a fatal error), and the poll thread goes on serving its callbacks until
none is left (`RetiredProducers`). A record sent before the broker froze is answered, or fails,
only after it thaws; dropped, the producer would never run that record's callback, and whatever
waited for it (a repartitioner's batch) would wait for ever.

>>> from confluent_kafka import KafkaError
>>> must_replace(KafkaError(KafkaError._MSG_TIMED_OUT)), must_replace(KafkaError(KafkaError._PURGE_QUEUE))
(True, False)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from streamjoin.kafka import DeliveryError, Producer, ProducerError

__all__ = ["FENCED_BY_BROKER", "GAPLESS_CONFIG", "RetiredProducers", "must_replace", "poll_producer"]

GAPLESS_CONFIG = {"enable.idempotence": True, "enable.gapless.guarantee": True}
"""The librdkafka options of every producer whose partitions must hold no gap."""

FENCED_BY_BROKER = frozenset({"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FENCED"})
"""Delivery errors after which the broker refuses every record of this producer."""

_log = logging.getLogger(__name__)

_GAP_RISK = FENCED_BY_BROKER | {"_MSG_TIMED_OUT", "_TIMED_OUT", "_GAPLESS_GUARANTEE", "_FATAL"}


def must_replace(error: DeliveryError) -> bool:
    """Return True when, after delivery error `error`, the producer must send nothing more: the
    broker fenced it, it stopped (fatal), or a record timed out (see the module)."""
    return bool(error.fatal()) or error.name() in _GAP_RISK


RETIRED_POLL_S = 300.0
"""How long, at most, a replaced producer's callbacks are waited for (librdkafka's request and
message timeouts are far shorter)."""


class RetiredProducers:
    """Producers replaced with records of theirs still queued or in flight (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the loop adds, the poll thread polls
        self._producers: list[tuple[Producer, float]] = []

    def add(self, producer: Producer) -> None:
        """Purge `producer`'s queued records (each fails with `_PURGE_QUEUE`) and poll it until every
        callback ran. Records in flight are left to the broker's answer or librdkafka's timeout: a
        gapless producer purging them fails for good (`_GAPLESS_GUARANTEE`)."""
        producer.purge(in_queue=True, in_flight=False, blocking=False)
        with self._lock:
            self._producers.append((producer, time.monotonic() + RETIRED_POLL_S))

    def poll(self) -> None:
        """Serve the retired producers' callbacks; forget those with nothing left (or too old)."""
        with self._lock:
            retired = list(self._producers)
        if not retired:
            return
        now = time.monotonic()
        done = []
        for producer, until in retired:
            _serve(producer, 0, lambda: None)
            if len(producer) == 0 or now > until:
                done.append(producer)
        with self._lock:
            self._producers = [(p, u) for p, u in self._producers if p not in done]


def poll_producer(
    stop: threading.Event,
    producer: Callable[[], Producer],
    broken: Callable[[], bool],
    retired: RetiredProducers,
    fail: Callable[[], None],
) -> None:
    """Serve `producer()`'s callbacks, and `retired`'s, until `stop`; once `broken()`, purge its
    queued (not yet sent) records once, so that none is written after a failed one (see the module).
    `fail` is called when polling raises a fatal error: the producer must be replaced."""
    purged: Producer | None = None
    while not stop.is_set():
        current = producer()
        _serve(current, 0.05, fail)
        retired.poll()
        if purged is not current and broken():
            current.purge(in_queue=True, in_flight=False, blocking=False)
            purged = current


def _serve(producer: Producer, timeout_s: float, fail: Callable[[], None]) -> None:
    """Run `producer`'s callbacks due within `timeout_s`. librdkafka raises a fatal error out of
    `poll`; caught, so that the thread goes on serving every producer's callbacks (its death left
    each later batch of the worker waiting for ever)."""
    try:
        producer.poll(timeout_s)
    except ProducerError as exc:
        _log.error("producer failed: %s", exc)
        fail()
