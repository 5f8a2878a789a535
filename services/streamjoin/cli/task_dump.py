"""SIGUSR1: log where every task of a running process waits (docs/joiner.md, "A stuck worker").

A worker that stops making progress without failing (a task awaiting something that never comes)
shows nothing in its log. `kill -USR1 <pid>` writes to stderr, for every thread, the Python frames
it is in (`faulthandler`: this works even while the event loop is blocked in a call), then logs,
for every asyncio task, its name and the frames it is suspended in; the process goes on running.
The fault scenarios send it to every worker before they report a partition that did not drain.
"""

from __future__ import annotations

import asyncio
import faulthandler
import io
import logging
import signal
import sys

__all__ = ["TASK_DUMP_HEADER", "dump_tasks", "install", "uninstall"]

_log = logging.getLogger("streamjoin.tasks.dump")

TASK_DUMP_HEADER = "task dump"
"""The first words of the tasks' log record (what the fault scenarios look for)."""


def dump_tasks(loop: asyncio.AbstractEventLoop) -> str:
    """Return, for each of `loop`'s tasks, its name and the frames it waits in, as text."""
    out = io.StringIO()
    tasks = sorted(asyncio.all_tasks(loop), key=lambda t: t.get_name())
    out.write(f"{TASK_DUMP_HEADER}: {len(tasks)} tasks\n")
    for task in tasks:
        where = "; ".join(f"{f.f_code.co_name}:{f.f_lineno}" for f in task.get_stack())
        out.write(f"  task {task.get_name()}: {where or '(not started)'}\n")
    return out.getvalue()


def install(loop: asyncio.AbstractEventLoop) -> None:
    """On every SIGUSR1 sent to this process: the threads' frames to stderr, `dump_tasks` logged."""
    loop.add_signal_handler(signal.SIGUSR1, lambda: _log.warning("%s", dump_tasks(loop).rstrip()))
    # After the loop's handler, chained to it: the threads' frames are written at once, from C.
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True, chain=True)


def uninstall(loop: asyncio.AbstractEventLoop) -> None:
    """Undo `install`."""
    faulthandler.unregister(signal.SIGUSR1)
    loop.remove_signal_handler(signal.SIGUSR1)
