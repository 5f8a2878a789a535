"""A redis-server of its own on a fixed port that a test can kill, wipe and start again."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from streamjoin.dev.ports import LOOPBACK, free_port
from streamjoin.dev.process import ManagedProcess
from streamjoin.dev.redis_server import find_redis_server
from streamjoin.dev.resp import RespConnection

__all__ = ["RestartableRedis"]


class RestartableRedis:
    """Redis with `appendfsync always` in `workdir/data`: `crash` (SIGKILL), `pause`/`resume`
    (SIGSTOP/SIGCONT), `wipe` (lose everything), `start` again."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.data = workdir / "data"
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    def start(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        argv = [
            find_redis_server(), "--port", str(self.port), "--bind", LOOPBACK, "--save", "",
            "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.data),
        ]  # fmt: skip
        self.process = ManagedProcess("redis", argv, log_path=self.workdir / "redis.log", cwd=self.workdir)
        self.process.start()
        self.process.wait_ready(self._pong, timeout_ms=20_000)

    def _pong(self) -> bool:
        with RespConnection(LOOPBACK, self.port, timeout_ms=500) as conn:
            return conn.call("PING") == b"PONG"

    def crash(self) -> None:
        """SIGKILL the server (what it acknowledged is on disk: `appendfsync always`)."""
        assert self.process is not None and self.process.pid is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.stop(timeout_ms=2_000)

    def wipe(self) -> None:
        """Delete the data directory: the next `start` is a Redis restarted empty."""
        shutil.rmtree(self.data, ignore_errors=True)

    def pause(self) -> None:
        """SIGSTOP: Redis keeps its connections open and answers nothing (a hung server)."""
        assert self.process is not None and self.process.pid is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None and self.process.pid is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(timeout_ms=5_000)
