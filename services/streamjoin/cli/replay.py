"""`streamjoin replay QUERY.json EVENTS.jsonl`: the live engine over a file, results on stdout.

The query may also be SQL or CQL text over declared streams: `streamjoin replay --streams STREAMS.json
QUERY.sql EVENTS.jsonl` (or `.cql`, or a query JSON with an `sql`/`cql` field), or `--streams
STREAMS.json --cql "SELECT ..." EVENTS.jsonl`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn

from streamjoin.query import QueryDef
from streamjoin.replay import DeadLetterLog, ReplayError, load_query, query_from_cql, replay
from streamjoin.replay_sinks import Format

__all__ = ["register"]


def replay_command(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="QUERY EVENTS.jsonl: the query (JSON, or with --streams a .sql/.cql text file), the events "
            '(one {"stream": ..., "record": {...}} per line); with --cql, EVENTS.jsonl only',
            show_default=False,
        ),
    ],
    streams_file: Annotated[
        Path | None,
        typer.Option(
            "--streams",
            help='the streams a SQL or CQL query names: a JSON list of {"name", "topic", "timestamp", "key"} '
            '(as POST /v1/streams takes) or an object {"name": {"topic", "timestamp", "key"}}',
        ),
    ] = None,
    cql: Annotated[str | None, typer.Option("--cql", help="the CQL text (needs --streams)")] = None,
    output_format: Annotated[
        Format,
        typer.Option(
            "--format",
            help="envelope: the output record; flat: {query, ts, id, <stream>_<field>...}; ids: result ids",
        ),
    ] = "envelope",
    count: Annotated[bool, typer.Option("--count", help="print the number of results only")] = False,
    dead_letters: Annotated[
        Path | None,
        typer.Option(
            "--dead-letters",
            help="write each malformed record to this JSONL file ({line, stream, reason, event})",
        ),
    ] = None,
) -> None:
    """Replay a query over recorded events; print one result per line, nothing else on stdout.

    A malformed record is skipped as the joiner dead-letters it: reported on stderr with its reason
    (and written to --dead-letters), counted at the end; the exit status stays 0.
    """
    err = Console(stderr=True)
    letters = None
    try:
        query, events_file = _query_and_events(files, streams_file, cql)
        letters = dead_letters.open("w", encoding="utf-8") if dead_letters is not None else None
        log = DeadLetterLog(sys.stderr, letters)
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
                        on_malformed=log,
                    )
            else:
                replay(query, lines, sys.stdout, output_format=output_format, count=count, on_malformed=log)
        if log.count:
            print(f"streamjoin replay: {log.count} malformed record(s) skipped", file=sys.stderr)
    except ReplayError as exc:
        print(f"streamjoin replay: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    except OSError as exc:
        print(f"streamjoin replay: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    finally:
        if letters is not None:
            letters.close()
    sys.stdout.flush()


def _query_and_events(files: list[Path], streams_file: Path | None, cql: str | None) -> tuple[QueryDef, Path]:
    """Return the query and the events file the arguments name; raise `ReplayError` if they do not fit."""
    if cql is not None and streams_file is None:
        raise ReplayError("--cql needs --streams STREAMS.json (the topics and timestamps of its streams)")
    wanted = 1 if cql is not None else 2
    if len(files) != wanted:
        usage = "EVENTS.jsonl (the query is --cql)" if cql is not None else "QUERY EVENTS.jsonl"
        raise ReplayError(f"expected {usage}, got {len(files)} file argument(s)")
    if cql is not None and streams_file is not None:
        return query_from_cql(cql, streams_file), files[0]
    return load_query(files[0], streams_file), files[1]


def register(app: typer.Typer) -> None:
    """Add the `replay` command to `app`."""
    app.command("replay")(replay_command)
