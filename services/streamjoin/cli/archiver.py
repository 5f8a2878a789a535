"""`streamjoin archiver`: run the archiver service in the foreground until SIGTERM or Ctrl-C.

Topics: `--topic` (repeatable, or comma-separated), else every topic declared with role `input` in
the topic catalog. The archive is `--archive-url`, else `$STREAMJOIN_ARCHIVE_URL`, else `./archive`.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path
from typing import Annotated, Literal

import typer

from streamjoin.cli.logs import configure_logging
from streamjoin.client_security import aiokafka_options
from streamjoin.settings import load_settings
from streamjoin.topics import CatalogError, load_catalog

__all__ = ["archiver_command", "register"]


def archiver_command(
    topic: Annotated[
        list[str] | None,
        typer.Option("--topic", "-t", help="Topic to archive (default: the catalog's inputs)."),
    ] = None,
    archive_url: Annotated[
        str | None, typer.Option(help="Archive directory or URL (default: $STREAMJOIN_ARCHIVE_URL).")
    ] = None,
    bootstrap: Annotated[str | None, typer.Option("--bootstrap", "-b", help="Broker host:port.")] = None,
    topics_file: Annotated[Path | None, typer.Option(help="The topic declaration.")] = None,
    start: Annotated[
        str, typer.Option(help="Where a partition with nothing archived starts: earliest or latest.")
    ] = "earliest",
    flush_records: Annotated[
        int, typer.Option(help="Write a partition's buffer at this many records.")
    ] = 200_000,
    flush_interval_ms: Annotated[
        int, typer.Option(help="Write a buffer whose oldest record waited this long.")
    ] = 5_000,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve /metrics on METRICS_HOST:PORT (0: any free port).")
    ] = 9465,
    metrics_host: Annotated[
        str, typer.Option(help="Address /metrics listens on (0.0.0.0: every interface, for Prometheus).")
    ] = "127.0.0.1",
    log_level: Annotated[str, typer.Option(help="Logging level.")] = "INFO",
) -> None:
    """Copy input topics into the Parquet archive, exactly once; expose the lag on /metrics."""
    from streamjoin.archiver.service import Archiver, ArchiverConfig, topics_from

    configure_logging(log_level)
    if start not in ("earliest", "latest"):
        raise typer.BadParameter("must be earliest or latest", param_hint="--start")
    start_at: Literal["earliest", "latest"] = "earliest" if start == "earliest" else "latest"
    settings = load_settings(kafka_bootstrap=bootstrap, archive_url=archive_url, topics_file=topics_file)
    topics = topics_from(topic or [])
    if not topics:
        try:
            topics = tuple(spec.name for spec in load_catalog(settings.topics_file).by_role("input"))
        except CatalogError as exc:
            typer.echo(f"streamjoin archiver: {exc}", err=True)
            raise typer.Exit(2) from exc
    if not topics:
        typer.echo("streamjoin archiver: no topic to archive (give --topic)", err=True)
        raise typer.Exit(2)
    config = ArchiverConfig(
        bootstrap=settings.kafka_bootstrap,
        archive_url=settings.archive_url,
        topics=topics,
        start=start_at,
        flush_records=flush_records,
        flush_interval_ms=flush_interval_ms,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        kafka_options=aiokafka_options(settings),
    )
    archiver = Archiver(config)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, archiver.stop)
        await archiver.run()

    asyncio.run(main())
    logging.getLogger(__name__).info("archiver stopped")


def register(app: typer.Typer) -> None:
    """Add the `archiver` command to `app`."""
    app.command("archiver")(archiver_command)
