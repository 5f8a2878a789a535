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

>>> from confluent_kafka import KafkaError
>>> must_replace(KafkaError(KafkaError._MSG_TIMED_OUT)), must_replace(KafkaError(KafkaError._PURGE_QUEUE))
(True, False)
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from streamjoin.kafka import DeliveryError, Producer

__all__ = ["FENCED_BY_BROKER", "GAPLESS_CONFIG", "must_replace", "poll_producer"]

GAPLESS_CONFIG = {"enable.idempotence": True, "enable.gapless.guarantee": True}
"""The librdkafka options of every producer whose partitions must hold no gap."""

FENCED_BY_BROKER = frozenset({"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FENCED"})
"""Delivery errors after which the broker refuses every record of this producer."""

_GAP_RISK = FENCED_BY_BROKER | {"_MSG_TIMED_OUT", "_TIMED_OUT", "_GAPLESS_GUARANTEE", "_FATAL"}


def must_replace(error: DeliveryError) -> bool:
    """Return True when, after delivery error `error`, the producer must send nothing more: the
    broker fenced it, it stopped (fatal), or a record timed out (see the module)."""
    return bool(error.fatal()) or error.name() in _GAP_RISK


def poll_producer(
    stop: threading.Event, producer: Callable[[], Producer], broken: Callable[[], bool]
) -> None:
    """Serve `producer()`'s callbacks until `stop`; once `broken()`, purge its queued (not yet sent)
    records once, so that none is written after a failed one (see the module)."""
    purged: Producer | None = None
    while not stop.is_set():
        current = producer()
        current.poll(0.05)
        if purged is not current and broken():
            current.purge(in_queue=True, in_flight=False, blocking=False)
            purged = current
