"""Virtual hosts (`streamjoin.dev.netns`): reachable, cut off and back, and nothing left afterwards."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from streamjoin.dev.netns import VirtualNetwork, netns_unavailable
from streamjoin.dev.process import ManagedProcess

_SERVER = (
    "import socket, sys\n"
    "s = socket.socket(); s.bind((sys.argv[1], 7000)); s.listen()\n"
    "while True:\n"
    "    c, _ = s.accept(); c.sendall(b'hello'); c.close()\n"
)


def _hello(address: str, timeout_s: float = 1.0) -> bytes | None:
    try:
        with socket.create_connection((address, 7000), timeout=timeout_s) as conn:
            return conn.recv(5)
    except OSError:
        return None


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def test_bad_host_names_are_refused() -> None:
    with pytest.raises(ValueError, match="distinct"):
        VirtualNetwork(["a", "a"])
    with pytest.raises(ValueError, match="at least one"):
        VirtualNetwork([])


def test_hosts_reach_each_other_until_cut_and_nothing_is_left(tmp_path: Path) -> None:
    reason = netns_unavailable()
    if reason is not None:
        pytest.skip(reason)
    with VirtualNetwork(["server", "client"]) as network:
        network.start()
        server, client = network.hosts["server"], network.hosts["client"]
        made = {server.netns, client.netns, server.bridge_netns}
        assert made <= set(_ip("netns", "list").split())
        process = ManagedProcess("server", [*server.launcher, sys.executable, "-c", _SERVER, server.address],
                                 log_path=tmp_path / "server.log")  # fmt: skip
        process.start()
        try:
            process.wait_ready(lambda: _hello(server.address) == b"hello", timeout_ms=10_000)
            other_host = subprocess.run(
                [*client.launcher, sys.executable, "-c",
                 f"import socket; print(socket.create_connection(('{server.address}', 7000), 2).recv(5))"],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
            assert other_host.stdout.strip() == "b'hello'", other_host.stderr
            server.cut()
            assert _hello(server.address) is None
            server.restore()
            assert _hello(server.address, 5.0) == b"hello"
        finally:
            process.stop(timeout_ms=5_000)
    assert not made & set(_ip("netns", "list").split())
    token = server.netns.split("-")[0]
    assert token not in _ip("-o", "link")
