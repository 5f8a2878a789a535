"""Find live processes by process group or by an environment marker (Linux `/proc`).

Used to prove that stopping the stack leaves nothing behind: every process of a managed group, and
every descendant of a command run with a marker variable in its environment. Zombies are not counted:
they hold no resources but a process-table slot, and are reaped by init. `zombie` and `children` tell
whether a process waits for the children it started.

>>> import os
>>> os.getpid() in group_members(os.getpgid(0))
True
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["children", "group_members", "pid_alive", "processes_with_env", "zombie"]

_PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """Return the fields of /proc/PID/stat after the command name, or None if the process is gone."""
    try:
        raw = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def _pids() -> list[int]:
    return [int(entry.name) for entry in _PROC.iterdir() if entry.name.isdigit()]


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def zombie(pid: int) -> bool:
    """Whether process `pid` exited and its parent has not waited for it yet (state `Z`).

    >>> zombie(os.getpid())
    False
    """
    fields = _stat_fields(pid)
    return fields is not None and fields[0] == "Z"


def children(pid: int) -> list[int]:
    """Return the children of process `pid`, zombies included (every thread's `task/*/children`)."""
    found: set[int] = set()
    for listing in (_PROC / str(pid) / "task").glob("*/children"):
        try:
            found.update(int(child) for child in listing.read_text().split())
        except OSError:  # the thread ended meanwhile
            continue
    return sorted(found)


def group_members(pgid: int) -> list[int]:
    """Return the live (non-zombie) processes whose process group is `pgid`."""
    members = []
    for pid in _pids():
        fields = _stat_fields(pid)
        # fields: state, ppid, pgrp, ...
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(pid)
    return members


def processes_with_env(name: str, value: str) -> list[int]:
    """Return the live processes (readable by us) whose environment has `name=value`."""
    needle = f"{name}={value}".encode()
    found = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        try:
            environ = (_PROC / str(pid) / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and pid_alive(pid):
            found.append(pid)
    return found
