"""What a running system costs: CPU seconds and peak RSS of a process and all its descendants.

A system of the Kafka mode is one command whose process tree does the work (a JVM under a Python
driver, joiner workers under their launcher). `TreeMeter` samples the tree while it runs, so a
process that ends before the measurement still counts with the CPU it had when last seen (its
parent's `cutime` has it too once the parent waited for it, which is then not counted twice: a
process's figure is its own plus its waited-for children's, and a child already folded into its
parent's is dropped from the sum).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TreeMeter", "cpu_seconds", "descendants", "hwm_kb", "rss_kb"]

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def cpu_seconds(pid: int | None) -> float:
    """Return the user + system CPU seconds of `pid` and of the children it waited for."""
    fields = _stat(pid) if pid is not None else None
    return 0.0 if fields is None else sum(int(f) for f in fields[11:15]) / _TICK


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def hwm_kb(pid: int | None) -> int:
    """Return the peak resident set (VmHWM) of `pid` in KiB, 0 if it is gone."""
    return 0 if pid is None else _status_kb(pid, "VmHWM:")


def rss_kb(pid: int | None) -> int:
    """Return the resident set (VmRSS) of `pid` in KiB, 0 if it is gone."""
    return 0 if pid is None else _status_kb(pid, "VmRSS:")


def descendants(root: int) -> list[int]:
    """Return `root` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


class TreeMeter:
    """Samples a process tree: CPU seconds since the first sample, and the sum of peak RSS."""

    def __init__(self, root: int) -> None:
        """Start measuring the tree under `root` (its CPU so far is the baseline)."""
        self._root = root
        self._last: dict[int, float] = {}
        self._parent: dict[int, int] = {}
        self._hwm: dict[int, int] = {}
        self._baseline = 0.0
        self.sample()
        self._baseline = self.cpu_s

    def sample(self) -> None:
        """Read the tree now (call it every fraction of a second while the system runs)."""
        for pid in descendants(self._root):
            fields = _stat(pid)
            if fields is None:
                continue
            self._parent[pid] = int(fields[1])
            self._last[pid] = sum(int(f) for f in fields[11:15]) / _TICK
            self._hwm[pid] = max(self._hwm.get(pid, 0), hwm_kb(pid))

    @property
    def cpu_s(self) -> float:
        """CPU seconds of the tree since the meter started, as of the last sample."""
        live = set(descendants(self._root))
        total = 0.0
        for pid, seconds in self._last.items():
            # A process gone and reaped by a parent we see is in that parent's cutime already.
            if pid not in live and self._parent.get(pid) in live:
                continue
            total += seconds
        return total - self._baseline

    @property
    def peak_rss_kb(self) -> int:
        """The sum of every process's peak resident set seen."""
        return sum(self._hwm.values())
