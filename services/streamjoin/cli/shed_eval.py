"""`streamjoin shed-eval QUERY.json EVENTS.jsonl`: exact result, offline optimum and every policy."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.console import Console
from rich.table import Table

from streamjoin.query_file import QueryFileError, StreamSource, environment_settings, load_query
from streamjoin.replay import ReplayError, read_events
from streamjoin.shedding import ShedInputError, build_instance, evaluate
from streamjoin.shedding.optimum import Method

__all__ = ["register"]


def _table(report: dict[str, Any], memory: int) -> Table:
    optimum = report["optimum"]
    best = optimum["importance"]
    table = Table(title=f"shedding with memory {memory} ({optimum['method']})")
    table.add_column("run")
    for column in ("results", "importance", "share of optimum"):
        table.add_column(column, justify="right")

    def share(importance: float) -> str:
        return f"{100 * importance / best:.1f}%" if best else "-"

    table.add_row("exact", str(report["exact"]["results"]), str(report["exact"]["importance"]), "")
    table.add_row(
        f"optimum ({optimum['method']})", str(optimum["results"]), str(best), share(best), style="bold"
    )
    if "feasible" in optimum:
        feasible = optimum["feasible"]
        table.add_row(
            "  feasible schedule",
            str(feasible["results"]),
            str(feasible["importance"]),
            share(feasible["importance"]),
        )
    for row in report["policies"]:
        table.add_row(row["policy"], str(row["results"]), str(row["importance"]), share(row["importance"]))
    return table


def shed_eval_command(
    query_file: Annotated[Path, typer.Argument(help="the query JSON, with or without a shedding field")],
    events_file: Annotated[Path, typer.Argument(help='one {"stream": ..., "record": {...}} per line')],
    memory: Annotated[
        int | None, typer.Option("--memory", help="the memory budget in records (default: the query's)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object instead of a table")] = False,
    method: Annotated[
        str, typer.Option("--method", help="the optimum: auto, odja (two inputs, small) or flow")
    ] = "auto",
    streams_file: Annotated[
        Path | None,
        typer.Option(
            "--streams",
            help="the streams the query names, as for `streamjoin replay` (default: the registry at "
            "$STREAMJOIN_REDIS_URL, asked only when an input gives no timestamp)",
        ),
    ] = None,
) -> None:
    """Replay events under the exact join, the offline optimum and every shedding policy."""
    try:
        if method not in ("auto", "odja", "flow"):
            raise ShedInputError(f"--method must be auto, odja or flow, not {method!r}")
        query = load_query(query_file, StreamSource(streams_file, environment_settings))
        budget = memory if memory is not None else (query.shedding.memory if query.shedding else None)
        if budget is None:
            raise ShedInputError("no memory budget: give --memory or a shedding field in the query")
        if budget < len(query.inputs):
            raise ShedInputError(f"--memory must be at least {len(query.inputs)} (one record per window)")
        with events_file.open(encoding="utf-8") as lines:
            events = [(n, stream, ts, record) for n, stream, ts, record, _ in read_events(query, lines)]
        instance = build_instance(query, events)
        seed = query.shedding.seed if query.shedding else 0
        report = evaluate(instance, budget, seed=seed, method=cast(Method, method))
    except (ReplayError, QueryFileError, ShedInputError, OSError, ValueError) as exc:
        print(f"streamjoin shed-eval: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(report))
    else:
        Console().print(_table(report, budget))


def register(app: typer.Typer) -> None:
    """Add the `shed-eval` command to `app`."""
    app.command("shed-eval")(shed_eval_command)
