"""A managed subprocess: started in its own process group, waited for, and stopped without leftovers.

Life cycle: `start()` spawns the command in a new session (so a Ctrl-C meant for the parent does not
reach it and its whole group can be signalled), with stdout and stderr appended to a log file.
`wait_ready(check)` polls `check` until it passes, failing early with the log's tail if the process
exits. `stop()` sends SIGTERM to the group, waits a bounded time, then SIGKILLs the group; it is
idempotent and also runs at interpreter exit for any process still alive.

>>> import sys, tempfile, pathlib
>>> log = pathlib.Path(tempfile.mkdtemp()) / "sleeper.log"
>>> proc = ManagedProcess("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], log_path=log)
>>> proc.start()
>>> proc.running
True
>>> proc.stop(timeout_ms=5_000)
-15
>>> proc.running
False
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from streamjoin.dev.ports import free_port
from streamjoin.dev.procscan import group_members

__all__ = [
    "start_on_free_port",
    "ManagedProcess",
    "ProcessExitedError",
    "ProcessService",
    "ReadinessTimeoutError",
    "ReadyCheck",
    "stop_all",
]

_log = logging.getLogger(__name__)

ReadyCheck = Callable[[], bool]
"""Return True once the process serves; may raise (counted as "not yet")."""

_POLL_MS = 20
_LIVE: set[ManagedProcess] = set()
_LIVE_LOCK = threading.Lock()


class ProcessExitedError(RuntimeError):
    """The process exited before it was ready."""

    def __init__(self, name: str, returncode: int | None, log_tail: str) -> None:
        super().__init__(
            f"{name} exited with code {returncode} before it was ready; its log ends with:\n{log_tail}"
        )
        self.returncode = returncode
        self.log_tail = log_tail


class ReadinessTimeoutError(TimeoutError):
    """The process did not become ready in time (it has been stopped)."""

    def __init__(self, name: str, timeout_ms: int, last_error: str, log_tail: str) -> None:
        super().__init__(
            f"{name} was not ready after {timeout_ms} ms (last check: {last_error}); "
            f"its log ends with:\n{log_tail}"
        )
        self.log_tail = log_tail


class ManagedProcess:
    """One subprocess in its own process group, with a log file and a bounded stop."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        """Describe the process; nothing runs until `start`.

        Args:
            name: a short name for messages ("broker", "redis").
            argv: the command and its arguments.
            log_path: file that receives the process's stdout and stderr (appended).
            env: the complete environment of the process; None inherits ours.
            cwd: working directory; None inherits ours.
        """
        self.name = name
        self.argv = tuple(argv)
        self.log_path = log_path
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._popen: subprocess.Popen[bytes] | None = None
        self._returncode: int | None = None
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The process id (also its process-group id), or None before `start`."""
        return self._popen.pid if self._popen is not None else None

    @property
    def running(self) -> bool:
        """Whether the process was started and has not exited."""
        return self._popen is not None and not self._stopped and not self._leader_exited()

    def start(self) -> None:
        """Spawn the process in a new session; its output goes to `log_path`."""
        if self._popen is not None:
            raise RuntimeError(f"{self.name} was already started")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env,
                cwd=self._cwd,
                start_new_session=True,
                close_fds=True,
            )
        with _LIVE_LOCK:
            _LIVE.add(self)
        _log.debug("started %s (pid %d): %s", self.name, self._popen.pid, " ".join(self.argv))

    def wait_ready(self, check: ReadyCheck, *, timeout_ms: int = 30_000) -> int:
        """Poll `check` until it returns True; return the milliseconds waited.

        Raises:
            ProcessExitedError: the process exited first.
            ReadinessTimeoutError: `timeout_ms` passed; the process is stopped before raising.
        """
        if self._popen is None:
            raise RuntimeError(f"{self.name} was not started")
        started = time.monotonic()
        deadline = started + timeout_ms / 1000
        last_error = "not run"
        while True:
            if self._leader_exited():
                returncode = self.stop(timeout_ms=0)
                raise ProcessExitedError(self.name, returncode, self.log_tail())
            try:
                if check():
                    return int((time.monotonic() - started) * 1000)
                last_error = "not ready"
            except Exception as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            if time.monotonic() >= deadline:
                self.stop()
                raise ReadinessTimeoutError(self.name, timeout_ms, last_error, self.log_tail())
            time.sleep(_POLL_MS / 1000)

    def wait_exit(self, *, timeout_ms: int) -> int | None:
        """Wait up to `timeout_ms` for the process to exit on its own; return its exit code (None: still
        running, and then stopped)."""
        if self._popen is None:
            raise RuntimeError(f"{self.name} was not started")
        deadline = time.monotonic() + timeout_ms / 1000
        while not self._leader_exited() and time.monotonic() < deadline:
            time.sleep(_POLL_MS / 1000)
        exited = self._leader_exited()
        code = self.stop(timeout_ms=0)
        return code if exited else None

    def stop(self, *, timeout_ms: int = 10_000) -> int | None:
        """Stop the whole process group: SIGTERM, wait up to `timeout_ms`, then SIGKILL.

        Idempotent. Returns the exit code (negative: killed by that signal), None if never started.
        """
        with self._lock:
            if self._popen is None:
                return None
            if self._stopped:
                return self._returncode
            pgid = self._popen.pid
            self._signal_group(pgid, signal.SIGTERM)
            # A stopped process (SIGSTOP, as the fault tests do) acts on SIGTERM only once continued.
            self._signal_group(pgid, signal.SIGCONT)
            deadline = time.monotonic() + timeout_ms / 1000
            while not self._leader_exited() and time.monotonic() < deadline:
                time.sleep(_POLL_MS / 1000)
            if not self._leader_exited():
                _log.warning("%s did not stop within %d ms of SIGTERM; killing it", self.name, timeout_ms)
            # The leader is not reaped yet, so the group id cannot have been reused: this SIGKILL reaches
            # exactly the stragglers of our group (children that ignored SIGTERM) and nobody else.
            self._signal_group(pgid, signal.SIGKILL)
            self._returncode = self._popen.wait()
            self._stopped = True
            _wait_group_empty(pgid, timeout_ms=2_000)
        with _LIVE_LOCK:
            _LIVE.discard(self)
        _log.debug("stopped %s (pid %d): exit code %s", self.name, pgid, self._returncode)
        return self._returncode

    def log_tail(self, lines: int = 40) -> str:
        """Return the last `lines` lines of the process's log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    def _leader_exited(self) -> bool:
        """Whether the process exited, without reaping it (so its group id stays reserved)."""
        if self._popen is None:
            return False
        if self._popen.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self._popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    @staticmethod
    def _signal_group(pgid: int, signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)


def _wait_group_empty(pgid: int, *, timeout_ms: int) -> None:
    """Wait until no process of group `pgid` is left (killed members are reaped by init)."""
    deadline = time.monotonic() + timeout_ms / 1000
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(_POLL_MS / 1000)
    left = group_members(pgid)
    if left:
        _log.warning("process group %d still has members after SIGKILL: %s", pgid, left)


def start_on_free_port(
    name: str,
    argv_for: Callable[[int], Sequence[str]],
    ready_for: Callable[[int], ReadyCheck],
    *,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    attempts: int = 3,
    timeout_ms: int = 30_000,
) -> tuple[ManagedProcess, int, int]:
    """Start a server on a free loopback port and wait until it is ready; return (process, port, ms).

    A free port can be taken between choosing it and the server binding it; the server then exits,
    and another port is tried, up to `attempts` times.
    """
    for attempt in range(1, attempts + 1):
        port = free_port()
        process = ManagedProcess(name, argv_for(port), log_path=log_path, env=env, cwd=cwd)
        process.start()
        try:
            ready_ms = process.wait_ready(ready_for(port), timeout_ms=timeout_ms)
        except ProcessExitedError:
            if attempt == attempts:
                raise
            continue
        return process, port, ready_ms
    raise AssertionError("unreachable: attempts >= 1")


class ProcessService:
    """What every service of the embedded stack shares: one managed process, its port, and `stop`.

    Subclasses set `name`, start the process in `start(workdir)` (setting `_process`, `port` and
    `ready_ms`) and say where users reach it in `endpoints()`.
    """

    name = "service"

    def __init__(self, *, ready_timeout_ms: int) -> None:
        """Describe the service; nothing runs until `start`.

        Args:
            ready_timeout_ms: how long `start` waits for the service to answer.
        """
        self._ready_timeout_ms = ready_timeout_ms
        self._process: ManagedProcess | None = None
        self.port: int | None = None
        self.ready_ms: int | None = None

    @property
    def process(self) -> ManagedProcess | None:
        """The running process, once started."""
        return self._process

    def stop(self, *, timeout_ms: int = 10_000) -> None:
        """Stop the process (SIGTERM, then SIGKILL after `timeout_ms`); idempotent."""
        if self._process is not None:
            self._process.stop(timeout_ms=timeout_ms)


def stop_all(*, timeout_ms: int = 5_000) -> None:
    """Stop every managed process still running (run at interpreter exit)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        proc.stop(timeout_ms=timeout_ms)


atexit.register(stop_all)
