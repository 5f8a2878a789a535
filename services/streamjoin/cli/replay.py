"""`streamjoin replay QUERY.json EVENTS.jsonl`: the live engine over a file, results on stdout.

The query's streams are resolved as over REST (`streamjoin.query_file`): from `--streams
STREAMS.json`, else from the registry at `STREAMJOIN_REDIS_URL` when the query needs them. The
query may also be SQL or CQL text: `streamjoin replay --streams STREAMS.json QUERY.sql EVENTS.jsonl`
(or `.cql`, or a query JSON with an `sql`/`cql` field), or `--streams STREAMS.json --cql "SELECT ..."
EVENTS.jsonl`.

Exit status: 0 done; 1 nothing to replay (no events, or every record malformed); 2 a bad query,
streams file or events line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn

from streamjoin.query import QueryDef
from streamjoin.query_file import (
    QueryFileError,
    StreamSource,
    environment_settings,
    load_query,
    query_from_cql,
)
from streamjoin.replay import DeadLetterLog, ReplayError, replay
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
            help='the streams the query names: a JSON list of {"name", "topic", "timestamp", "key", ...} '
            "as POST /v1/streams takes (default: the registry at $STREAMJOIN_REDIS_URL, asked only when "
            "the query has text or an input without timestamp)",
        ),
    ] = None,
    registry_prefix: Annotated[
        str, typer.Option(help="The registry's key prefix (the control plane's).")
    ] = "streamjoin:",
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
    (and written to --dead-letters), counted at the end; the exit status stays 0 unless no record at
    all could be replayed (1).
    """
    err = Console(stderr=True)
    letters = None
    try:
        source = StreamSource(streams_file, environment_settings, registry_prefix)
        query, events_file = _query_and_events(files, source, cql)
        letters = dead_letters.open("w", encoding="utf-8") if dead_letters is not None else None
        log = DeadLetterLog(sys.stderr, letters)
        with events_file.open(encoding="utf-8") as file:
            lines = _Counted(file)
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
    except (ReplayError, QueryFileError) as exc:
        print(f"streamjoin replay: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    except OSError as exc:
        print(f"streamjoin replay: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    finally:
        if letters is not None:
            letters.close()
    sys.stdout.flush()
    if lines.records == log.count:  # nothing reached the engine: say so rather than print nothing
        what = f"every record was malformed ({log.count})" if log.count else "it holds no events"
        print(f"streamjoin replay: nothing replayed: {events_file}: {what}", file=sys.stderr)
        raise typer.Exit(1)


class _Counted(Iterable[str]):
    """The lines of the events file, counting those that hold an event (not blank)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = lines
        self.records = 0

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            if line.strip():
                self.records += 1
            yield line

    def tell(self) -> int:
        """Return the position in the file (the progress bar's)."""
        tell = getattr(self._lines, "tell", None)
        return int(tell()) if tell is not None else 0


def _query_and_events(files: list[Path], source: StreamSource, cql: str | None) -> tuple[QueryDef, Path]:
    """Return the query and the events file the arguments name; raise `ReplayError` if they do not fit."""
    wanted = 1 if cql is not None else 2
    if len(files) != wanted:
        usage = "EVENTS.jsonl (the query is --cql)" if cql is not None else "QUERY EVENTS.jsonl"
        raise ReplayError(f"expected {usage}, got {len(files)} file argument(s)")
    if cql is not None:
        return query_from_cql(cql, source), files[0]
    return load_query(files[0], source), files[1]


def register(app: typer.Typer) -> None:
    """Add the `replay` command to `app`."""
    app.command("replay")(replay_command)
