"""A real Prometheus (Debian's `/usr/bin/prometheus`) scraping a test API, queried over its HTTP API."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from streamjoin.dev.ports import free_port
from streamjoin.dev.process import ManagedProcess

__all__ = ["Prometheus", "running_prometheus"]

BINARY = shutil.which("prometheus") or "/usr/bin/prometheus"


class Prometheus:
    """A running Prometheus: its URL and a PromQL helper."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=10)

    def query(self, promql: str) -> list[dict[str, Any]]:
        """Run an instant query; return its vector result."""
        response = self.http.get("/api/v1/query", params={"query": promql})
        response.raise_for_status()
        body = response.json()
        if body["status"] != "success":
            raise RuntimeError(f"{promql}: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_for(self, promql: str, *, timeout_s: float = 30) -> list[dict[str, Any]]:
        """Run `promql` until it returns a non-empty result (scrapes take a moment)."""
        deadline = time.monotonic() + timeout_s
        while True:
            result = self.query(promql)
            if result or time.monotonic() > deadline:
                return result
            time.sleep(0.3)


@contextmanager
def running_prometheus(target: str, workdir: Path, *, bearer: str | None = None) -> Iterator[Prometheus]:
    """Run Prometheus scraping `target` (`host:port`) every second; stop it at the end of the block."""
    port = free_port()
    job: dict[str, Any] = {
        "job_name": "streamjoin-api",
        "scrape_interval": "1s",
        "scrape_timeout": "1s",
        "static_configs": [{"targets": [target]}],
    }
    if bearer is not None:
        job["authorization"] = {"type": "Bearer", "credentials": bearer}
    config = workdir / "prometheus.yml"
    config.write_text(
        json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": [job]})
    )  # JSON is YAML
    process = ManagedProcess(
        "prometheus",
        [
            BINARY,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        log_path=workdir / "prometheus.log",
    )
    process.start()
    url = f"http://127.0.0.1:{port}"
    try:
        process.wait_ready(
            lambda: httpx.get(f"{url}/-/ready", timeout=1).status_code == 200, timeout_ms=30_000
        )
        prometheus = Prometheus(url)
        try:
            yield prometheus
        finally:
            prometheus.http.close()
    finally:
        process.stop(timeout_ms=10_000)
