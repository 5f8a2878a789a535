"""The soak's producer: the workload at a steady rate, on a thread of its own (`bench/soak/scenario.py`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from bench.pacing import Pacer, warm_up
from bench.soak.workload import CLOCK_START_MS, STREAMS, RecordMaker
from confluent_kafka import Producer

__all__ = ["PacedProducer"]


class PacedProducer(threading.Thread):
    """Produce the workload at `rate` records/s for `duration_s`, then the flush records."""

    def __init__(
        self, bootstrap: str, topics: Mapping[str, str], maker: RecordMaker, rate: float, duration_s: float
    ) -> None:
        super().__init__(daemon=True, name="soak-producer")
        self._topics = [topics[s] for s in STREAMS]
        self._maker, self._rate, self._duration_s = maker, rate, duration_s
        self._producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 10,
            "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 1_048_576,
            "message.timeout.ms": 600_000, "delivery.report.only.error": True,
        })  # fmt: skip
        self.errors: list[str] = []
        self.failure: BaseException | None = None
        self.started = threading.Event()
        self.start_time = 0.0

    def _send(self, s: int, p: int, value: bytes) -> None:
        while True:
            try:
                self._producer.produce(self._topics[s], value, partition=p, on_delivery=self._report)
                return
            except BufferError:
                self._producer.poll(0.05)

    def _report(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))

    def run(self) -> None:
        try:
            warm_up(self._producer, self._topics[0] + ".warmup")  # the producer id, before the clock
            pacer = Pacer(self._rate, self._duration_s, tick_s=0.002, producer=self._producer)
            self.start_time = pacer.start
            self.started.set()
            for due in pacer:  # event time: ms since the start, from 1,000,000
                event_ms = CLOCK_START_MS + pacer.elapsed_ms()
                for _ in due:
                    self._send(*self._maker.make(event_ms))
            for record in self._maker.flush(CLOCK_START_MS + pacer.elapsed_ms()):
                self._send(*record)
            left = self._producer.flush(600)
            if left:
                self.errors.append(f"{left} records not delivered")
        except BaseException as exc:
            self.failure = exc
            self.started.set()
