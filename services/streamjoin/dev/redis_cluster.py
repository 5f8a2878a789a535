"""An embedded Redis Cluster: 3 primaries and 3 replicas of Debian's `redis-server` on loopback ports.

Each node runs with `--cluster-enabled yes`, no persistence and a short `cluster-node-timeout`, so
a killed primary's replica is promoted within a few seconds; `redis-cli --cluster create` assigns
the slots and pairs every primary with a replica. Clients reach it at `url`,
`redis+cluster://127.0.0.1:PORT` (any node; the client discovers the others).

>>> cluster = EmbeddedRedisCluster()
>>> cluster.url is None
True
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import TracebackType

from streamjoin.dev.ports import LOOPBACK, free_port
from streamjoin.dev.process import ManagedProcess, start_on_free_port
from streamjoin.dev.redis_server import find_redis_server
from streamjoin.dev.resp import RespConnection

__all__ = ["ClusterNode", "EmbeddedRedisCluster"]

_PRIMARIES = 3


@dataclass(slots=True)
class ClusterNode:
    """One running node: its client port and process."""

    port: int
    process: ManagedProcess

    def call(self, *args: str, timeout_ms: int = 2_000) -> object:
        """Send one command to this node and return its reply."""
        with RespConnection(LOOPBACK, self.port, timeout_ms=timeout_ms) as conn:
            return conn.call(*args)


class EmbeddedRedisCluster:
    """Six memory-only cluster nodes on 127.0.0.1; `start` forms the cluster, `stop` ends every node."""

    def __init__(self, *, node_timeout_ms: int = 1_000, ready_timeout_ms: int = 60_000) -> None:
        """Describe the cluster; nothing runs until `start`.

        Args:
            node_timeout_ms: `cluster-node-timeout`: how long a silent primary is failed over after.
            ready_timeout_ms: how long `start` waits for the cluster to report `cluster_state:ok`.
        """
        self._node_timeout_ms = node_timeout_ms
        self._ready_timeout_ms = ready_timeout_ms
        self.nodes: list[ClusterNode] = []

    @property
    def url(self) -> str | None:
        """`redis+cluster://127.0.0.1:PORT` (the first node) once started."""
        return f"redis+cluster://{LOOPBACK}:{self.nodes[0].port}" if self.nodes else None

    def __enter__(self) -> EmbeddedRedisCluster:
        """Return the cluster (start it with `start`)."""
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop every node."""
        self.stop()

    def start(self, workdir: Path) -> None:
        """Start six nodes under `workdir`, form the cluster, wait until every node reports it ok."""
        binary = find_redis_server()
        try:
            for index in range(2 * _PRIMARIES):
                self.nodes.append(self._start_node(binary, workdir / f"redis-cluster-{index}"))
            cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
            addresses = [f"{LOOPBACK}:{n.port}" for n in self.nodes]
            create = [cli, "--cluster", "create", *addresses, "--cluster-replicas", "1", "--cluster-yes"]
            done = subprocess.run(create, capture_output=True, text=True, timeout=60, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout}{done.stderr}")
            self.wait_ok()
        except BaseException:
            self.stop()
            raise

    def _start_node(self, binary: str, data_dir: Path) -> ClusterNode:
        data_dir.mkdir(parents=True, exist_ok=True)
        bus_port = free_port()

        def argv(port: int) -> list[str]:
            return [
                binary,
                "--port", str(port),
                "--cluster-port", str(bus_port),
                "--bind", LOOPBACK,
                "--cluster-enabled", "yes",
                "--cluster-config-file", str(data_dir / "nodes.conf"),
                "--cluster-node-timeout", str(self._node_timeout_ms),
                "--repl-diskless-sync-delay", "0",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(data_dir),
                "--daemonize", "no",
                "--logfile", "",
            ]  # fmt: skip

        process, port, _ = start_on_free_port(
            "redis-cluster",
            argv,
            lambda port: partial(_pong, port),
            log_path=data_dir / "redis.log",
            cwd=data_dir,
            attempts=3,
            timeout_ms=30_000,
        )
        return ClusterNode(port, process)

    def info(self, node: ClusterNode, *command: str) -> dict[str, str]:
        """Return `CLUSTER INFO` (or `command`, e.g. `INFO replication`) of `node` as a dict."""
        raw = node.call(*(command or ("CLUSTER", "INFO")))
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        return dict(line.split(":", 1) for line in text.split() if ":" in line)

    def role(self, node: ClusterNode) -> str:
        """Return `master` or `slave` (what `ROLE` says)."""
        reply = node.call("ROLE")
        assert isinstance(reply, list)
        first = reply[0]
        return first.decode() if isinstance(first, bytes) else str(first)

    def live_nodes(self) -> list[ClusterNode]:
        """Return the nodes whose process still runs."""
        return [n for n in self.nodes if n.process.running]

    def primaries(self) -> list[ClusterNode]:
        """Return the running nodes that are primaries now."""
        return [n for n in self.live_nodes() if self.role(n) == "master"]

    def node_of_port(self, port: int) -> ClusterNode:
        """Return the node listening on `port`."""
        return next(n for n in self.nodes if n.port == port)

    def wait_ok(self, *, timeout_ms: int | None = None) -> None:
        """Wait until every running node reports `cluster_state:ok`, three primaries serve the slots and
        every running replica's link to its primary is up (a commit's `WAIT` can be answered)."""
        deadline = time.monotonic() + (timeout_ms or self._ready_timeout_ms) / 1000
        last = ""
        while time.monotonic() < deadline:
            try:
                states = [self.info(n) for n in self.live_nodes()]
                if (
                    all(s.get("cluster_state") == "ok" for s in states)
                    and len(self.primaries()) == _PRIMARIES
                    and all(
                        self.info(n, "INFO", "replication").get("master_link_status", "up") == "up"
                        for n in self.live_nodes()
                    )
                ):
                    return
                last = str([s.get("cluster_state") for s in states])
            except OSError as exc:
                last = str(exc)
            time.sleep(0.1)
        raise TimeoutError(f"the Redis Cluster did not become ok: {last}")

    def restart(self, node: ClusterNode) -> None:
        """Start a stopped `node` again on its ports with its cluster config (it rejoins as a replica
        of whichever node took its slots); wait until it answers PING."""
        if node.process.running:
            raise RuntimeError(f"node {node.port} still runs")
        old = node.process
        node.process = ManagedProcess(old.name, old.argv, log_path=old.log_path, cwd=old.log_path.parent)
        node.process.start()
        node.process.wait_ready(partial(_pong, node.port), timeout_ms=30_000)

    def replicas_of(self, primary: ClusterNode) -> list[ClusterNode]:
        """Return the nodes replicating `primary` now (what its `ROLE` lists)."""
        reply = primary.call("ROLE")
        assert isinstance(reply, list) and isinstance(reply[2], list)
        return [self.node_of_port(int(replica[1])) for replica in reply[2]]

    def pause(self, node: ClusterNode) -> None:
        """Freeze `node` (SIGSTOP): it neither answers nor replicates until `resume`."""
        if node.process.pid is not None:
            os.killpg(node.process.pid, signal.SIGSTOP)

    def resume(self, node: ClusterNode) -> None:
        """Let a paused `node` run again (SIGCONT)."""
        if node.process.pid is not None:
            os.killpg(node.process.pid, signal.SIGCONT)

    def kill(self, node: ClusterNode) -> None:
        """Kill `node` at once (SIGKILL, no shutdown), as a crashed host."""
        if node.process.pid is not None and node.process.running:
            os.killpg(node.process.pid, signal.SIGKILL)
        node.process.stop(timeout_ms=0)

    def stop(self) -> None:
        """Stop every node; idempotent."""
        for node in self.nodes:
            node.process.stop(timeout_ms=5_000)


def _pong(port: int) -> bool:
    with RespConnection(LOOPBACK, port, timeout_ms=500) as conn:
        return conn.call("PING") == b"PONG"
