"""A task's wait for input grows while nothing arrives, is back to short once a record does, and a
stop or a hold ends a long one at once (operators/quiet.py)."""

from __future__ import annotations

import asyncio
import time

from streamjoin.joiner.operators.quiet import QuietWait


async def _records_after(seconds: float, *, cancelled: list[bool]) -> dict[str, list[int]]:
    """A fetch that finds a record after `seconds` (and notes whether it was cancelled)."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled.append(True)
        raise
    return {"tp": [1]}


def test_the_wait_doubles_while_nothing_arrives_up_to_the_quiet_bound_and_a_record_resets_it() -> None:
    quiet = QuietWait(20, 200)
    waits = []
    for _ in range(6):
        waits.append(quiet.timeout_ms)
        quiet.found(False)
    assert waits == [20, 40, 80, 160, 200, 200]
    quiet.found(True)
    assert quiet.timeout_ms == 20


def test_an_interrupt_ends_a_quiet_wait_at_once_with_nothing_taken() -> None:
    async def main() -> tuple[dict[str, list[int]], float, list[bool]]:
        quiet, cancelled = QuietWait(20, 10_000), []
        asyncio.get_running_loop().call_later(0.05, quiet.interrupt)  # a stop, a hold
        t0 = time.monotonic()
        got = await quiet.fetch(_records_after(10, cancelled=cancelled), {}, 10_000)
        return got, time.monotonic() - t0, cancelled

    got, took_s, cancelled = asyncio.run(main())
    assert got == {} and took_s < 1 and cancelled == [True]


def test_a_record_ends_a_quiet_wait_and_an_interrupt_after_it_takes_nothing_away() -> None:
    async def main() -> tuple[dict[str, list[int]], list[bool]]:
        quiet, cancelled = QuietWait(20, 10_000), []
        got = await quiet.fetch(_records_after(0.01, cancelled=cancelled), {}, 10_000)
        quiet.interrupt()  # nothing under way: no effect
        return got, cancelled

    assert asyncio.run(main()) == ({"tp": [1]}, [])


def test_a_cancelled_task_cancels_its_quiet_fetch() -> None:
    async def main() -> list[bool]:
        quiet, cancelled = QuietWait(20, 10_000), []
        task = asyncio.ensure_future(quiet.fetch(_records_after(10, cancelled=cancelled), {}, 10_000))
        await asyncio.sleep(0.02)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0)
        return cancelled

    assert asyncio.run(main()) == [True]
