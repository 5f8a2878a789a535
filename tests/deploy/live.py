"""A live deployment on this machine: the services as docker-compose.yml runs them, scraped by Prometheus.

`LiveDeployment` starts, on the embedded broker and Redis, the control plane, a joiner and the
archiver with the argument vectors of docker-compose.yml (ports and addresses moved to free loopback
ports), and Debian's Prometheus scraping them every second with the scrape jobs of
deploy/prometheus/prometheus.yml. `run_workload` is the one function that drives a workload through
them: streams and a query registered over REST, records produced to the inputs (some late, some
malformed), a Control-Table write. Everything is stopped at the end, whatever failed.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from confluent_kafka import Producer

from streamjoin.dev.ports import free_port
from streamjoin.dev.process import ManagedProcess
from streamjoin.topics import TopicSpec, create_topics

from .alert_rules import RULES_FILE
from .commands import compose_argv, streamjoin_cli
from .dashboards import REPO_ROOT

__all__ = ["LiveDeployment", "Workload", "create_workload_topics", "run_workload"]

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
TOKEN = "live-" + uuid.uuid4().hex
SCRAPE_INTERVAL = "1s"


def _replace_option(argv: list[str], option: str, value: str) -> list[str]:
    """Return `argv` with the value after `option` replaced (appended if the option is absent)."""
    out = list(argv)
    if option in out:
        out[out.index(option) + 1] = value
    else:
        out += [option, value]
    return out


def _http_ok(url: str) -> bool:
    return httpx.get(url, timeout=2).status_code == 200


@dataclass
class Workload:
    """What `run_workload` set up: the query's name, its streams and topics."""

    query: str
    streams: dict[str, str]
    output_topic: str
    produced: int = 0
    stop: threading.Event = field(default_factory=threading.Event)


class LiveDeployment:
    """The control plane, a joiner, the archiver and Prometheus, on the embedded broker and Redis."""

    def __init__(self, workdir: Path, bootstrap: str, redis_url: str) -> None:
        self.workdir = workdir
        self.bootstrap = bootstrap
        self.redis_url = redis_url
        self.prefix = f"live-{uuid.uuid4().hex[:8]}:streamjoin:"
        self.api_port = free_port()
        self.api_url = f"http://127.0.0.1:{self.api_port}"
        self.metrics_port = free_port()
        self.joiner_port = free_port()
        self.archiver_port = free_port()
        self.prometheus_url = ""
        self.commands: dict[str, list[str]] = {}
        self._stack = ExitStack()
        self.processes: dict[str, ManagedProcess] = {}

    def env(self, **extra: str) -> dict[str, str]:
        """Return the environment of a service: ours, plus the STREAMJOIN_* contract."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMJOIN_")}
        env.update(
            STREAMJOIN_KAFKA_BOOTSTRAP=self.bootstrap,
            STREAMJOIN_REDIS_URL=self.redis_url,
            STREAMJOIN_API_HOST="127.0.0.1",
            STREAMJOIN_API_PORT=str(self.api_port),
            STREAMJOIN_METRICS_PORT=str(self.metrics_port),
            STREAMJOIN_API_TOKEN=TOKEN,
            STREAMJOIN_API_REGISTRY_PREFIX=self.prefix,
            STREAMJOIN_ARCHIVE_URL=str(self.workdir / "archive"),
        )
        env.update(extra)
        return env

    def _start(self, name: str, argv: Sequence[str], ready_url: str, *, timeout_ms: int = 60_000) -> None:
        if argv[0] != "streamjoin" and name != "prometheus":
            raise ValueError(f"{name}: {argv}")
        self.commands[name] = list(argv)
        command = [*streamjoin_cli(), *argv[1:]] if argv[0] == "streamjoin" else list(argv)
        process = ManagedProcess(name, command, log_path=self.workdir / f"{name}.log", env=self.env())
        self._stack.callback(process.stop, timeout_ms=10_000)
        self.processes[name] = process
        process.start()
        process.wait_ready(lambda: _http_ok(ready_url), timeout_ms=timeout_ms)

    def start_api(self) -> None:
        """Start the control plane with the compose file's command."""
        self._start("api", compose_argv("api"), f"{self.api_url}/readyz")

    def start_joiner(self) -> None:
        """Start one joiner with the compose file's command (its own registry prefix and group)."""
        joiner = compose_argv("joiner")
        joiner = _replace_option(joiner, "--ready-host", "127.0.0.1")
        joiner = _replace_option(joiner, "--ready-port", str(self.joiner_port))
        joiner = [*joiner, "--prefix", self.prefix, "--group", f"live-{uuid.uuid4().hex[:8]}"]
        self._start("joiner", joiner, f"http://127.0.0.1:{self.joiner_port}/readyz", timeout_ms=90_000)

    def start_archiver(self, archive_topics: Sequence[str]) -> None:
        """Start the archiver with the compose file's command, on `archive_topics`."""
        archiver = _replace_option(compose_argv("archiver"), "--metrics-host", "127.0.0.1")
        archiver = _replace_option(archiver, "--metrics-port", str(self.archiver_port))
        archiver = [*archiver, "--topic", ",".join(archive_topics), "--flush-interval-ms", "500"]
        self._start("archiver", archiver, f"http://127.0.0.1:{self.archiver_port}/metrics")

    def start_prometheus(self) -> None:
        """Start Prometheus with the compose config's scrape jobs, aimed at this deployment, every second."""
        shipped = yaml.safe_load((REPO_ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
        where = {
            "streamjoin-api": f"127.0.0.1:{self.metrics_port}",  # compose scrapes the metrics port
            "streamjoin-archiver": f"127.0.0.1:{self.archiver_port}",
        }
        jobs = []
        for job in shipped["scrape_configs"]:
            if job["job_name"] in where:
                job = {
                    **job,
                    "static_configs": [{**job["static_configs"][0], "targets": [where[job["job_name"]]]}],
                }
                jobs.append(job)
        assert {j["job_name"] for j in jobs} == set(where), "the shipped config lost a streamjoin job"
        config = {
            "global": {
                "scrape_interval": SCRAPE_INTERVAL,
                "scrape_timeout": SCRAPE_INTERVAL,
                "evaluation_interval": "5s",
            },
            "scrape_configs": jobs,
            "rule_files": [str(RULES_FILE)],  # the alert rules compose's Prometheus loads
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(yaml.safe_dump(config))
        port = free_port()
        self.prometheus_url = f"http://127.0.0.1:{port}"
        argv = [
            PROMETHEUS,
            f"--config.file={path}",
            f"--storage.tsdb.path={self.workdir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=1h",
            "--log.level=warn",
        ]
        self._start("prometheus", argv, f"{self.prometheus_url}/-/ready")

    def api(self) -> httpx.Client:
        """Return a client of the control plane with the write token."""
        client = httpx.Client(base_url=self.api_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        self._stack.callback(client.close)
        return client

    def promql(self, expr: str, *, range_s: int | None = None) -> list[dict[str, Any]]:
        """Evaluate `expr` now (instant) or over the last `range_s` seconds; return the result series."""
        now = time.time()
        if range_s is None:
            response = httpx.get(
                f"{self.prometheus_url}/api/v1/query", params={"query": expr, "time": now}, timeout=30
            )
        else:
            params = {"query": expr, "start": now - range_s, "end": now, "step": "2s"}
            response = httpx.get(f"{self.prometheus_url}/api/v1/query_range", params=params, timeout=30)
        body = response.json()
        if body.get("status") != "success":
            raise AssertionError(f"Prometheus rejected {expr!r}: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def check_running(self) -> None:
        """Raise if a service exited, with its log."""
        for name, process in self.processes.items():
            if not process.running:
                raise AssertionError(f"{name} exited:\n{process.log_tail(60)}")

    def logs(self) -> str:
        """Return the tail of every service's log, for a failure message."""
        return "\n".join(f"--- {name} ---\n{p.log_tail(30)}" for name, p in self.processes.items())

    def on_close(self, callback: Any, *args: Any) -> None:
        """Call `callback(*args)` when the deployment closes (before the services stop)."""
        self._stack.callback(callback, *args)

    def close(self) -> None:
        """Stop everything (reverse order)."""
        self._stack.close()


def _producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})


def create_workload_topics(bootstrap: str, *, partitions: int = 2) -> dict[str, str]:
    """Create the workload's topics, as the topic job does before the services start; return them by role."""
    run = uuid.uuid4().hex[:8]
    topics = {name: f"live.{run}.{name}" for name in ("orders", "payments", "joined")}
    specs = [TopicSpec(name=t, role="internal", partitions=partitions) for t in topics.values()]
    failed = [r for r in create_topics(bootstrap, specs) if not r.ok]
    assert not failed, failed
    return topics


def run_workload(live: LiveDeployment, topics: Mapping[str, str], *, rate_per_s: int = 200) -> Workload:
    """Register two streams and a query joining them, start the joiner, then produce until the end.

    Records share 50 join keys; about 1 in 200 is malformed (not JSON) and 1 in 200 is late (an hour
    old). The query sheds under a memory budget (`shedding`), so the shedding panel has data.
    """
    run = topics["orders"].split(".")[1]
    output = topics["joined"]
    api = live.api()
    for stream in ("orders", "payments"):
        topic = topics[stream]
        response = api.post(
            # keyed by k: the producer below uses the join key as the record key (read directly)
            "/v1/streams",
            json={"name": f"{stream}_{run}", "topic": topic, "timestamp": "ts", "key": "k"},
        )
        assert response.status_code == 201, response.text
    query = f"live-{run}"
    o, p = f"orders_{run}", f"payments_{run}"
    body = {
        "name": query,
        "inputs": [{"stream": o, "window": {"range": 5_000}}, {"stream": p, "window": {"range": 5_000}}],
        "where": [[f"{o}.k", "=", f"{p}.k"]],
        "output": {"topic": output},
        "lateness": 1_000,
        # A budget below what the windows need (about 1,000 records each), so the shedding panel has data.
        "shedding": {"memory": 400, "policy": "simp"},
    }
    response = api.post("/v1/queries", json=body)
    assert response.status_code == 201, response.text
    response = api.patch(f"/v1/control/queries/{query}", json={"expiration": {"mode": "eager"}})
    assert response.status_code == 200, response.text
    # The joiner starts once a query exists: today it cannot start with an empty registry, nor pick up
    # a query over topics created after it started (both reported; the deployments create topics first).
    live.start_joiner()
    deadline = time.monotonic() + 90
    while api.get(f"/v1/queries/{query}").json()["status"] != "running":
        live.check_running()
        if time.monotonic() > deadline:
            raise AssertionError(f"query not running: {api.get(f'/v1/queries/{query}').text}\n{live.logs()}")
        time.sleep(0.5)

    workload = Workload(
        query=query, streams={o: topics["orders"], p: topics["payments"]}, output_topic=output
    )
    thread = threading.Thread(target=_produce, args=(live.bootstrap, workload, rate_per_s), daemon=True)
    thread.start()
    live.on_close(workload.stop.set)
    live.on_close(thread.join, 15)
    return workload


def _produce(bootstrap: str, workload: Workload, rate_per_s: int) -> None:
    producer = _producer(bootstrap)
    rng = random.Random(8)
    period = 0.1
    try:
        while not workload.stop.is_set():
            started = time.monotonic()
            now = int(time.time() * 1000)
            for topic in workload.streams.values():
                for _ in range(int(rate_per_s * period)):
                    key = rng.randrange(50)
                    roll = rng.random()
                    if roll < 0.005:
                        value: bytes = b"not json {"
                    else:
                        ts = now - 3_600_000 if roll < 0.01 else now
                        value = json.dumps({"k": key, "ts": ts, "v": rng.random()}).encode()
                    producer.produce(topic, value, key=str(key).encode())
                    workload.produced += 1
            producer.poll(0)
            workload.stop.wait(max(period - (time.monotonic() - started), 0))
    finally:
        producer.flush(10)


def values(result: Sequence[Mapping[str, Any]]) -> list[float]:
    """Return every finite sample value of a Prometheus result (vector or matrix)."""
    out = []
    for series in result:
        samples = series.get("values") or [series.get("value")]
        for sample in samples:
            if sample is not None and sample[1] not in ("NaN", "+Inf", "-Inf"):
                out.append(float(sample[1]))
    return out
