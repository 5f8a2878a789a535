"""Produce records at a steady rate: the paced producer loop of the latency benchmarks.

Every `tick_s` the loop hands out the records due by then (record i is due `i / rate` seconds after
the start), so a run of `rate` records/s for `seconds` sends them in small bursts, not all at once
and not one sleep per record. An idempotent producer holds its first records until it has a
producer id (about 1 s on a fresh broker): `warm_up` pays that before the clock starts, so the
start-up is not counted as the system's latency.

>>> pacer = Pacer(rate=1_000, seconds=0.01, tick_s=0.001)
>>> sum(len(due) for due in pacer), pacer.total
(10, 10)
>>> sent = []
>>> produce_paced(None, 1_000, 0.01, lambda i, ms: sent.append(i)), sent == list(range(10))
(10, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from confluent_kafka import Producer

__all__ = ["Pacer", "produce_paced", "warm_up"]


def warm_up(producer: Producer, topic: str, partition: int = -1) -> None:
    """Write one record to `topic` (`partition`; -1: librdkafka's choice) and wait for it."""
    producer.produce(topic, b"{}", partition=partition)
    producer.flush(30)


class Pacer:
    """The indices of `rate * seconds` records, handed out as they fall due (iterate once).

    `start` is the monotonic time the run began (when the pacer was made): make it right before
    iterating. Between bursts it polls `producer`'s callbacks, if one is given.
    """

    def __init__(
        self, rate: float, seconds: float, *, tick_s: float = 0.001, producer: Producer | None = None
    ) -> None:
        self.total = int(rate * seconds)
        self._rate, self._tick_s, self._producer = rate, tick_s, producer
        self.start = time.monotonic()

    def elapsed_ms(self) -> int:
        """Return the ms since `start`."""
        return int((time.monotonic() - self.start) * 1000)

    def __iter__(self) -> Iterator[range]:
        """Yield, about every `tick_s`, the indices of the records due since the previous burst."""
        sent = 0
        while sent < self.total:
            due = min(int((time.monotonic() - self.start) * self._rate) + 1, self.total)
            yield range(sent, due)
            sent = due
            if self._producer is not None:
                self._producer.poll(0)
            time.sleep(self._tick_s)


def produce_paced(
    producer: Producer | None, rate: float, seconds: float, send: Callable[[int, int], None]
) -> int:
    """Call `send(i, sent_ms)` for the `rate * seconds` records at `rate` per second, `sent_ms` the
    wall-clock time of record i's burst in ms (what a result's latency is measured against); poll
    `producer`'s callbacks between bursts. Return how many records were sent."""
    pacer = Pacer(rate, seconds, producer=producer)
    for due in pacer:
        sent_ms = int(time.time() * 1000)
        for i in due:
            send(i, sent_ms)
    return pacer.total
