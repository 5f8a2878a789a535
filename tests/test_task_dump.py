"""SIGUSR1 makes a process log where each of its asyncio tasks waits, and goes on running."""

from __future__ import annotations

import asyncio
import logging
import os
import signal

import pytest

from streamjoin.cli import task_dump


async def _waits_for_ever(event: asyncio.Event) -> None:
    await event.wait()


def test_sigusr1_logs_every_task_and_where_it_waits(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        task_dump.install(loop)
        never = asyncio.Event()
        stuck = asyncio.create_task(_waits_for_ever(never), name="repartitioner q.a[3]")
        await asyncio.sleep(0)
        os.kill(os.getpid(), signal.SIGUSR1)
        for _ in range(50):
            await asyncio.sleep(0.01)
            if any(task_dump.TASK_DUMP_HEADER in r.getMessage() for r in caplog.records):
                break
        task_dump.uninstall(loop)
        assert not stuck.done()  # the dump changes nothing
        stuck.cancel()

    with caplog.at_level(logging.WARNING, logger="streamjoin.tasks.dump"):
        asyncio.run(main())
    dumps = [r.getMessage() for r in caplog.records if task_dump.TASK_DUMP_HEADER in r.getMessage()]
    assert len(dumps) == 1, caplog.text
    line = next(x for x in dumps[0].splitlines() if "repartitioner q.a[3]" in x)
    assert "_waits_for_ever" in line and "wait" in line, line
    # and every thread's frames, written by faulthandler (it works while the loop is blocked)
    assert "most recent call first" in capfd.readouterr().err
