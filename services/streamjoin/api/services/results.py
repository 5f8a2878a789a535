"""Read a query's results from its output topic with aiokafka (fast against the embedded broker).

`ResultService.stream` assigns every partition of the topic (no consumer group, nothing committed),
positions at the start asked for, yields a `positioned` event once every partition has a position,
then each result as it arrives, and stops at `limit` results or when `timeout_ms` has passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from streamjoin.kafka import Consumer, TopicPartition, end_offsets, partitions_of, reader

__all__ = ["ResultEvent", "ResultService", "StartAt"]

_log = logging.getLogger(__name__)
_POLL_MS = 200
_KEEPALIVE_S = 10.0

StartAt = Literal["latest", "earliest"] | int
"""Where to start: the end, the beginning, or the first record at or after a timestamp (ms)."""


@dataclass(frozen=True, slots=True)
class ResultEvent:
    """What the result stream reports: positioned, a result, a keep-alive, or the end (with why)."""

    kind: Literal["positioned", "result", "keepalive", "end"]
    value: Any = None
    id: str = ""
    reason: str = ""


class ResultService:
    """Consume output topics on the broker at `bootstrap`."""

    def __init__(
        self,
        bootstrap: str,
        *,
        kafka_options: Mapping[str, Any] | None = None,
        listed_ends_exact: bool = True,
    ) -> None:
        """Consume from the broker(s) at `bootstrap` (`host:port[,host:port]`).

        Args:
            bootstrap: the brokers.
            kafka_options: more consumer arguments: `client_security.aiokafka_options`.
            listed_ends_exact: the brokers list a partition's end exactly (`kafka.end_offsets`).
        """
        self._bootstrap = bootstrap
        self._options = dict(kafka_options or {})
        self._exact_ends = listed_ends_exact

    async def stream(
        self, topic: str, *, start: StartAt, limit: int, timeout_ms: int
    ) -> AsyncGenerator[ResultEvent, None]:
        """Yield `positioned`, then results (and keep-alives) until `limit` or `timeout_ms`; then `end`."""
        deadline = time.monotonic() + timeout_ms / 1000
        consumer = reader(
            self._bootstrap,
            options=self._options,
            auto_offset_reset="latest" if start == "latest" else "earliest",
        )
        count = 0
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.1)):
                await consumer.start()
            partitions = await self._partitions(consumer, topic, deadline)
            if partitions is None:
                yield ResultEvent("end", reason="timeout")
                return
            consumer.assign(partitions)
            await _position(consumer, partitions, start, deadline, exact_ends=self._exact_ends)
            yield ResultEvent("positioned")
            quiet_since = time.monotonic()
            while count < limit and (left := deadline - time.monotonic()) > 0:
                batches = await consumer.getmany(
                    timeout_ms=int(min(left * 1000, _POLL_MS)) or 1, max_records=limit - count
                )
                for tp, records in batches.items():
                    for record in records:
                        value = _decode(record.value)
                        if value is None:
                            _log.warning(
                                "skipping a non-JSON record at %s[%d]@%d",
                                tp.topic,
                                tp.partition,
                                record.offset,
                            )
                            continue
                        count += 1
                        yield ResultEvent(
                            "result", value, _result_id(value, record.headers, tp, record.offset)
                        )
                        quiet_since = time.monotonic()
                        if count >= limit:
                            break
                    if count >= limit:
                        break
                if time.monotonic() - quiet_since > _KEEPALIVE_S:
                    quiet_since = time.monotonic()
                    yield ResultEvent("keepalive")
            yield ResultEvent("end", reason="limit" if count >= limit else "timeout")
        except TimeoutError:
            yield ResultEvent("end", reason="timeout")
        finally:
            with contextlib.suppress(Exception):
                await consumer.stop()

    async def _partitions(
        self, consumer: Consumer, topic: str, deadline: float
    ) -> list[TopicPartition] | None:
        """Return the topic's partitions, waiting (until the deadline) for it to exist."""
        while True:
            numbers = await partitions_of(consumer, topic)
            if numbers:
                return [TopicPartition(topic, p) for p in sorted(numbers)]
            if time.monotonic() + 0.5 >= deadline:
                return None
            await asyncio.sleep(0.5)


async def _position(
    consumer: Consumer, partitions: list[TopicPartition], start: StartAt, deadline: float, *, exact_ends: bool
) -> None:
    if start == "earliest":
        await consumer.seek_to_beginning(*partitions)
    elif start == "latest":
        ends = await end_offsets(consumer, partitions, exact=exact_ends, timeout_ms=_left_ms(deadline))
        for tp in partitions:
            consumer.seek(tp, ends[tp])
    else:
        found = await consumer.offsets_for_times({tp: start for tp in partitions})
        ends = await end_offsets(consumer, partitions, exact=exact_ends, timeout_ms=_left_ms(deadline))
        for tp in partitions:
            hit = found.get(tp)
            consumer.seek(tp, hit.offset if hit is not None else ends[tp])
    for tp in partitions:
        await consumer.position(tp)


def _left_ms(deadline: float) -> int:
    return max(int((deadline - time.monotonic()) * 1000), 0)


def _decode(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None


def _result_id(value: Any, headers: Any, tp: TopicPartition, offset: int) -> str:
    if isinstance(value, dict) and isinstance(value.get("id"), str | int):
        return str(value["id"])
    for key, header in headers or ():
        if key == "id" and isinstance(header, bytes):
            return header.decode(errors="replace")
    return f"{tp.topic}:{tp.partition}:{offset}"
