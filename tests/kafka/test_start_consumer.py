"""`start_consumer`: a caller cancelled while the consumer starts does not leave it running."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from streamjoin.kafka import start_consumer


class _Consumer:
    """Just the two calls `start_consumer` makes; records whether `stop` ran."""

    def __init__(self) -> None:
        self.started = False
        self.stopped = False

    async def start(self) -> None:
        self.started = True

    async def stop(self) -> None:
        self.stopped = True


def test_a_cancelled_start_stops_the_consumer() -> None:
    consumer = _Consumer()

    async def cancel_while_starting() -> None:
        task = asyncio.create_task(start_consumer(cast(Any, consumer)))
        await asyncio.sleep(0)  # the task runs `start()` and waits in its `sleep(0)`
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_while_starting())
    assert consumer.started and consumer.stopped


def test_a_started_consumer_is_left_running() -> None:
    consumer = _Consumer()
    asyncio.run(start_consumer(cast(Any, consumer)))
    assert consumer.started and not consumer.stopped
