"""`streamjoin joiner`: run one joiner worker in the foreground until SIGTERM (docs/joiner.md)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from typing import Annotated

import typer

from streamjoin.cli import task_dump
from streamjoin.cli.logs import configure_logging
from streamjoin.settings import load_settings

__all__ = ["register", "run_joiner"]

_log = logging.getLogger("streamjoin.joiner")


def run_joiner(
    *,
    bootstrap: str | None = None,
    redis_url: str | None = None,
    worker_id: str | None = None,
    group: str = "streamjoin-joiner",
    prefix: str = "streamjoin:",
    ready_port: int | None = None,
    ready_host: str = "127.0.0.1",
    max_batch: int = 5_000,
    fetch_wait_ms: int | None = None,
    idle_timeout_ms: int | None = None,
    session_timeout_ms: int = 10_000,
    group_stall_ms: int | None = None,
    exit_within_ms: int = 9_000,
) -> None:
    """Run a worker until SIGTERM or SIGINT (exit code 0), or until it leaves a stalled consumer group
    (`EXIT_GROUP_STALLED`, 75: start it again); exit within `exit_within_ms` of either whatever happens."""
    from streamjoin.engine import tune_gc
    from streamjoin.joiner import JoinerWorker, OperatorConfig, WorkerConfig
    from streamjoin.joiner.config import default_worker_id

    settings = load_settings(kafka_bootstrap=bootstrap, redis_url=redis_url)
    config = WorkerConfig(
        worker_id=worker_id or default_worker_id(),
        group=group,
        prefix=prefix,
        ready_host=ready_host,
        ready_port=ready_port,
        session_timeout_ms=session_timeout_ms,
        group_stall_ms=group_stall_ms,
        registry_lag_ms=settings.joiner_registry_lag_ms,
        layout_concurrency=settings.joiner_layout_concurrency,
        slots=settings.joiner_slots,
        operator=OperatorConfig(
            max_batch=max_batch,
            **({} if fetch_wait_ms is None else {"fetch_wait_ms": fetch_wait_ms}),
            idle_timeout_ms=idle_timeout_ms,
            max_future=settings.max_future,
            max_record_bytes=settings.max_record_bytes,
            schema_registry_url=settings.schema_registry_url,
        ),
    )
    tune_gc()

    async def main() -> int:
        worker = JoinerWorker(settings, config)
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            _log.info("signal %d: stopping", signum)
            worker.request_stop()

        async def bound_the_exit() -> None:
            await worker.stop_requested()
            # The state is crash-safe, so a shutdown that hangs (Faust can) is cut short.
            timer = threading.Timer(exit_within_ms / 1000, lambda: os._exit(worker.exit_code))
            timer.daemon = True
            timer.start()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal, signum)
        task_dump.install(loop)  # SIGUSR1: where every task waits (a stuck worker)
        bound = asyncio.create_task(bound_the_exit())
        try:
            await worker.run()
        finally:
            bound.cancel()
        return worker.exit_code

    code = asyncio.run(main())
    if code:
        raise SystemExit(code)


def register(app: typer.Typer) -> None:
    """Add the `joiner` command to `app`."""

    @app.command("joiner")
    def joiner(
        bootstrap: Annotated[
            str | None, typer.Option(help="Kafka bootstrap (STREAMJOIN_KAFKA_BOOTSTRAP).")
        ] = None,
        redis_url: Annotated[str | None, typer.Option(help="Redis URL (STREAMJOIN_REDIS_URL).")] = None,
        worker_id: Annotated[str | None, typer.Option(help="This worker's id (default: host-pid).")] = None,
        group: Annotated[
            str, typer.Option(help="Faust app id / consumer group of the joiners.")
        ] = "streamjoin-joiner",
        prefix: Annotated[str, typer.Option(help="Redis key prefix.")] = "streamjoin:",
        ready_port: Annotated[int | None, typer.Option(help="Serve GET /readyz on this port.")] = None,
        ready_host: Annotated[str, typer.Option(help="Address of the readiness endpoint.")] = "127.0.0.1",
        max_batch: Annotated[int, typer.Option(help="Most records per batch and partition.")] = 5_000,
        fetch_wait_ms: Annotated[
            int | None,
            typer.Option(
                help="How long the broker may hold an input fetch with no new records (default 500;"
                " Apache Kafka answers as soon as records arrive)."
            ),
        ] = None,
        idle_timeout_ms: Annotated[
            int | None, typer.Option(help="Idle input partitions stop holding the watermark after this.")
        ] = None,
        session_timeout_ms: Annotated[int, typer.Option(help="Group session timeout.")] = 10_000,
        group_stall_ms: Annotated[
            int | None,
            typer.Option(
                help="Exit (code 75, to be started again) when a rebalance leaves the worker without an"
                " assignment this long (default: 3 session timeouts)."
            ),
        ] = None,
        log_level: Annotated[str, typer.Option(help="Logging level.")] = "INFO",
    ) -> None:
        """Run one joiner worker in the foreground until SIGTERM."""
        configure_logging(log_level)
        if log_level.upper() != "DEBUG":  # Faust, mode and aiokafka narrate every rebalance at INFO
            for noisy in ("faust", "mode", "aiokafka"):
                logging.getLogger(noisy).setLevel(logging.WARNING)
        run_joiner(
            bootstrap=bootstrap,
            redis_url=redis_url,
            worker_id=worker_id,
            group=group,
            prefix=prefix,
            ready_port=ready_port,
            ready_host=ready_host,
            max_batch=max_batch,
            fetch_wait_ms=fetch_wait_ms,
            idle_timeout_ms=idle_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            group_stall_ms=group_stall_ms,
        )
