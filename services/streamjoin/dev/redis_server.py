"""The embedded Redis: Debian's `redis-server` on a free loopback port, without persistence.

With `tls=RedisTls(...)` it serves TLS only (`rediss://`), with the given certificate, to check the
clients' TLS settings against a real server.

>>> server = EmbeddedRedis()
>>> server.url is None
True
"""

from __future__ import annotations

import os
import shutil
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from streamjoin.dev.ports import LOOPBACK
from streamjoin.dev.process import ProcessService, start_on_free_port
from streamjoin.dev.resp import RespConnection

__all__ = ["REDIS_BIN_ENV", "EmbeddedRedis", "RedisTls", "find_redis_server"]

REDIS_BIN_ENV = "STREAMJOIN_REDIS_SERVER_BIN"
_PORT_ATTEMPTS = 3


def find_redis_server() -> str:
    """Return the `redis-server` executable: `$STREAMJOIN_REDIS_SERVER_BIN`, else the one on PATH."""
    override = os.environ.get(REDIS_BIN_ENV)
    if override:
        return override
    found = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/sbin:/usr/bin")
    if found is None:
        raise FileNotFoundError(
            "redis-server is not installed: run the README's commands (they install it with apt-get "
            f"when run as root), or `sudo apt-get install redis-server`, or set ${REDIS_BIN_ENV}"
        )
    return found


@dataclass(frozen=True, slots=True)
class RedisTls:
    """The server's PEM certificate and key, and the CA that signed it (clients are not authenticated)."""

    cert_file: Path
    key_file: Path
    ca_file: Path


class EmbeddedRedis(ProcessService):
    """A memory-only `redis-server` bound to 127.0.0.1 (or `host`) on a free port."""

    name = "redis"

    def __init__(
        self,
        *,
        appendonly: bool = False,
        ready_timeout_ms: int = 30_000,
        tls: RedisTls | None = None,
        host: str = LOOPBACK,
        launcher: Sequence[str] = (),
    ) -> None:
        """Describe the server; nothing runs until `start`.

        Args:
            appendonly: turn on the append-only file (in the work directory); off by default.
            ready_timeout_ms: how long `start` waits for PING to answer.
            tls: serve TLS only, with this certificate (Redis built with TLS, as Debian's is).
            host: the address it binds (loopback unless another host is simulated; any other address
                turns protected mode off, since clients then come from other hosts by design).
            launcher: an argv prefix that runs it elsewhere, e.g. `ip netns exec NS` (see `dev.netns`).
        """
        self._appendonly = appendonly
        super().__init__(ready_timeout_ms=ready_timeout_ms)
        self._tls = tls
        self._host = host
        self._launcher = tuple(launcher)

    @property
    def url(self) -> str | None:
        """`redis://HOST:PORT/0` (`rediss://` with TLS; HOST 127.0.0.1 by default) once started."""
        scheme = "rediss" if self._tls is not None else "redis"
        return f"{scheme}://{self._host}:{self.port}/0" if self.port is not None else None

    def endpoints(self) -> Mapping[str, str]:
        """Where clients reach the server."""
        return {"Redis": self.url} if self.url else {}

    def start(self, workdir: Path) -> None:
        """Start the server with its data directory and log under `workdir`; wait until PING answers."""
        binary = find_redis_server()
        data_dir = workdir / "redis"
        data_dir.mkdir(parents=True, exist_ok=True)

        tls = self._tls

        def argv(port: int) -> list[str]:
            listen = ["--port", str(port)]
            if tls is not None:
                listen = [
                    "--port", "0",
                    "--tls-port", str(port),
                    "--tls-cert-file", str(tls.cert_file),
                    "--tls-key-file", str(tls.key_file),
                    "--tls-ca-cert-file", str(tls.ca_file),
                    "--tls-auth-clients", "no",
                ]  # fmt: skip
            return [
                *self._launcher,
                binary,
                *listen,
                "--bind", self._host,
                "--protected-mode", "yes" if self._host == LOOPBACK else "no",
                "--save", "",
                "--appendonly", "yes" if self._appendonly else "no",
                "--dir", str(data_dir),
                "--daemonize", "no",
                "--logfile", "",
                "--databases", "16",
            ]  # fmt: skip

        self._process, self.port, self.ready_ms = start_on_free_port(
            self.name,
            argv,
            lambda port: partial(_pong, port, tls, self._host),
            log_path=workdir / "redis.log",
            cwd=data_dir,
            attempts=_PORT_ATTEMPTS,
            timeout_ms=self._ready_timeout_ms,
        )


def _pong(port: int, tls: RedisTls | None = None, host: str = LOOPBACK) -> bool:
    context = ssl.create_default_context(cafile=str(tls.ca_file)) if tls is not None else None
    with RespConnection(host, port, timeout_ms=500, ssl_context=context) as conn:
        return conn.call("PING") == b"PONG"
