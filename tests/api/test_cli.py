"""`streamjoin api` as a process: binds loopback, serves, logs to stderr, exits on SIGTERM within 10 s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from streamjoin.dev.ports import free_port

STREAMJOIN = [sys.executable, "-c", "from streamjoin.cli.main import main; main()"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMJOIN_")}
    env.update(extra)
    return env


def test_serves_and_stops_on_sigterm(redis_server: str, kafka_broker: str, tmp_path: Path) -> None:
    port, metrics_port = free_port(), free_port()
    stdout, stderr = tmp_path / "out.log", tmp_path / "err.log"
    env = _env(
        STREAMJOIN_REDIS_URL=redis_server,
        STREAMJOIN_KAFKA_BOOTSTRAP=kafka_broker,
        STREAMJOIN_API_TOKEN="t",
        STREAMJOIN_METRICS_PORT=str(metrics_port),
    )
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        process = subprocess.Popen(
            [*STREAMJOIN, "api", "--port", str(port)],
            stdout=out,
            stderr=err,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, stderr.read_text()
            assert time.monotonic() < deadline, stderr.read_text()
            time.sleep(0.1)
        assert httpx.get(f"http://127.0.0.1:{port}/v1/streams").status_code == 200
        metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics")  # the metrics port: /metrics only
        assert metrics.status_code == 200 and "streamjoin_registry_version" in metrics.text
        assert httpx.get(f"http://127.0.0.1:{metrics_port}/v1/streams").status_code == 404
        assert (
            httpx.post(f"http://127.0.0.1:{port}/v1/streams", json={"name": "s", "topic": "t"}).status_code
            == 401
        )
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert time.monotonic() - started < 10
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    log = stderr.read_text()
    assert (
        f"127.0.0.1:{port}" in log and f"127.0.0.1:{metrics_port}" in log and "GET /healthz" in log
    )  # uvicorn's and access logs go to stderr
    assert stdout.read_text() == ""


def test_production_without_a_token_or_a_registry_key_refuses_to_start() -> None:
    done = subprocess.run(
        [*STREAMJOIN, "api"],
        env=_env(STREAMJOIN_PRODUCTION="true", STREAMJOIN_KAFKA_ALLOW_PLAINTEXT="true"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "STREAMJOIN_API_TOKEN" in done.stderr
    done = subprocess.run(
        [*STREAMJOIN, "api"],
        env=_env(
            STREAMJOIN_PRODUCTION="true",
            STREAMJOIN_API_TOKEN="t" * 32,
            STREAMJOIN_KAFKA_ALLOW_PLAINTEXT="true",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "STREAMJOIN_REGISTRY_KEY" in done.stderr
