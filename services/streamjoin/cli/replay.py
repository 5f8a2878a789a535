"""`streamjoin replay QUERY.json EVENTS.jsonl`: the live engine over a file, results on stdout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn

from streamjoin.replay import ReplayError, load_query, replay
from streamjoin.replay_sinks import Format

__all__ = ["register"]


def replay_command(
    query_file: Annotated[
        Path, typer.Argument(help="the query JSON (its inputs may be `sql`/`cql` text), or a .sql file")
    ],
    events_file: Annotated[Path, typer.Argument(help='one {"stream": ..., "record": {...}} per line')],
    streams_file: Annotated[
        Path | None,
        typer.Option(
            "--streams",
            help='the streams a SQL or CQL query names: {"orders": {"topic": ..., "timestamp": "ts"}}',
        ),
    ] = None,
    output_format: Annotated[
        Format,
        typer.Option(
            "--format",
            help="envelope: the output record; flat: {query, ts, id, <stream>_<field>...}; ids: result ids",
        ),
    ] = "envelope",
    count: Annotated[bool, typer.Option("--count", help="print the number of results only")] = False,
) -> None:
    """Replay a query over recorded events; print one result per line, nothing else on stdout."""
    err = Console(stderr=True)
    try:
        query = load_query(query_file, streams_file)
        with events_file.open(encoding="utf-8") as lines:
            if err.is_terminal:  # progress goes to stderr, and only for a person watching
                total = events_file.stat().st_size
                with Progress(TextColumn("replay"), BarColumn(), TransferSpeedColumn(), console=err) as bar:
                    task = bar.add_task("replay", total=total)
                    replay(
                        query,
                        lines,
                        sys.stdout,
                        on_line=lambda _n: bar.update(task, completed=lines.tell()),
                        output_format=output_format,
                        count=count,
                    )
            else:
                replay(query, lines, sys.stdout, output_format=output_format, count=count)
    except ReplayError as exc:
        print(f"streamjoin replay: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    except OSError as exc:
        print(f"streamjoin replay: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    """Add the `replay` command to `app`."""
    app.command("replay")(replay_command)
