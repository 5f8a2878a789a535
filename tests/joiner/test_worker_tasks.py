"""The worker's periodic jobs end when cancelled, even when the cancellation arrives as the awaited
call answers: a shutdown cancels them and waits for them before it stops the operators (with Python
3.11's `asyncio.wait_for` such a loop lost the cancellation and ran on, so the worker hung until its
exit timer killed it and no operator reported its release)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from streamjoin.joiner.health import Health
from streamjoin.joiner.worker.checks import probe_kafka
from streamjoin.joiner.worker.tasks import cancel_and_wait, every, retry_until_stopped


class _Meta:
    """A metadata client whose answer the test hands out."""

    def __init__(self, answer: asyncio.Future[set[str]]) -> None:
        self._answer = answer

    async def topics(self) -> set[str]:
        return await self._answer


def _cancelled_as_it_answers(loop_of: Callable[[asyncio.Future[set[str]]], Awaitable[object]]) -> bool:
    """Start `loop_of(answer)`, let it wait for the answer, then answer and cancel in one step;
    return whether the task ended cancelled within a second."""

    async def run() -> bool:
        answer: asyncio.Future[set[str]] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(loop_of(answer))
        await asyncio.sleep(0.01)  # the probe waits for its answer
        answer.set_result(set())
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=1.0)
        if not done:
            task.cancel()  # let the test end either way
            await asyncio.wait({task}, timeout=1.0)
            return False
        return task.cancelled()

    return asyncio.run(run())


def test_the_periodic_kafka_probe_ends_when_cancelled_as_the_broker_answers() -> None:
    def probing(answer: asyncio.Future[set[str]]) -> Awaitable[None]:
        meta = _Meta(answer)
        return every(Health(), 5, lambda: probe_kafka(meta))  # type: ignore[arg-type]

    assert _cancelled_as_it_answers(probing)


def test_a_start_up_retry_ends_when_cancelled_as_its_call_answers() -> None:
    def retrying(answer: asyncio.Future[set[str]]) -> Awaitable[object]:
        meta = _Meta(answer)
        return retry_until_stopped(Health(), asyncio.Event(), "kafka", lambda: probe_kafka(meta))  # type: ignore[arg-type]

    assert _cancelled_as_it_answers(retrying)


def test_a_shutdown_goes_on_without_a_task_that_ignores_its_cancellation_and_names_it() -> None:
    released = asyncio.Event()

    async def stubborn() -> None:
        while not released.is_set():
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue

    async def run() -> tuple[list[str], bool, bool]:
        polite = asyncio.create_task(asyncio.sleep(10), name="polite")
        kept = asyncio.create_task(stubborn(), name="stubborn")
        await asyncio.sleep(0)
        stuck = await cancel_and_wait([polite, kept], timeout_s=0.2)
        ended = polite.cancelled(), kept.done()
        released.set()  # end its loop under the test's own control
        kept.cancel()
        await asyncio.wait({kept}, timeout=1.0)
        return stuck, *ended

    stuck, polite_cancelled, stubborn_done = asyncio.run(run())
    assert (stuck, polite_cancelled, stubborn_done) == (["stubborn"], True, False)
