"""A Spark standalone cluster on loopback, started from the installed PySpark's own launcher.

`spark-class org.apache.spark.deploy.master.Master` and `...worker.Worker` are what the
`sbin/start-master.sh`/`start-worker.sh` scripts of a Spark distribution run; the PyPI `pyspark`
package ships `bin/spark-class` but not those scripts, so the processes are started directly, each in
its own process group (`ManagedProcess`), and stopped by `stop()`. Each worker offers 1 core and a
little memory; the master's REST submission server is off (it would take port 6066).
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamjoin.dev.ports import LOOPBACK, free_port
from streamjoin.dev.process import ManagedProcess

__all__ = ["SparkStandalone", "spark_home"]


def spark_home() -> Path:
    """Return the installed PySpark's directory, which is a complete SPARK_HOME (bin/, jars/)."""
    import pyspark

    return Path(pyspark.__file__).parent


class SparkStandalone:
    """A master and `workers` workers (1 core, `worker_memory` each) on 127.0.0.1 with free ports."""

    def __init__(self, root: Path, *, workers: int = 2, worker_memory: str = "768m") -> None:
        """Describe the cluster; `root` holds the logs, the workers' directories and SPARK_CONF_DIR."""
        self.root = root
        self.home = spark_home()
        self.conf_dir = root / "conf"
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://{LOOPBACK}:{self.port}"
        self._workers = workers
        self._worker_memory = worker_memory
        self._procs: list[ManagedProcess] = []

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Return the environment of a Spark process of this cluster (or a driver submitting to it)."""
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(self.home),
            SPARK_CONF_DIR=str(self.conf_dir),
            SPARK_LOCAL_IP=LOOPBACK,
            SPARK_LOG_DIR=str(self.root / "logs"),
        )
        env.update(extra or {})
        return env

    def start(self) -> None:
        """Start the master, then the workers; return once every worker is registered and alive."""
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "spark-defaults.conf").write_text(
            "spark.executor.memory 512m\nspark.executor.cores 1\nspark.master.rest.enabled false\n",
            encoding="utf-8",
        )
        master = ManagedProcess(
            "spark-master",
            [str(self.home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
             "--host", LOOPBACK, "--port", str(self.port), "--webui-port", str(self.ui_port),
             "--properties-file", str(self.conf_dir / "spark-defaults.conf")],
            log_path=self.root / "master.log",
            env=self.env(),
        )  # fmt: skip
        self._procs.append(master)
        master.start()
        master.wait_ready(lambda: self.status()["status"] == "ALIVE", timeout_ms=120_000)
        for i in range(self._workers):
            work = self.root / f"worker-{i}"
            work.mkdir(parents=True, exist_ok=True)
            worker = ManagedProcess(
                f"spark-worker-{i}",
                [str(self.home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
                 "--host", LOOPBACK, "--port", str(free_port()), "--webui-port", str(free_port()),
                 "--cores", "1", "--memory", self._worker_memory, "--work-dir", str(work), self.url],
                log_path=self.root / f"worker-{i}.log",
                env=self.env(),
            )  # fmt: skip
            self._procs.append(worker)
            worker.start()
        master.wait_ready(lambda: self.status()["aliveworkers"] == self._workers, timeout_ms=120_000)

    def status(self) -> dict[str, Any]:
        """Return the master's state as its web UI serves it (`/json/`): workers, apps, cores."""
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.ui_port}/json/", timeout=5) as response:
            state: dict[str, Any] = json.load(response)
        return state

    def stop(self) -> None:
        """Stop the workers, then the master (each process group, bounded)."""
        for proc in reversed(self._procs):
            proc.stop(timeout_ms=15_000)
        self._procs.clear()

    def log_tail(self) -> str:
        """Return the end of every process's log, for a failure message."""
        return "\n".join(f"--- {p.name}\n{p.log_tail(20)}" for p in self._procs)
