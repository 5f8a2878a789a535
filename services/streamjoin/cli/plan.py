"""`streamjoin plan STREAMS.json [--all] [--query QUERY.json]`: the cost model and the planner.

Prints one JSON object: the heuristic's global order and its cost, the exhaustive optimum (null
above 8 streams), with `--all` every global order with its cost, cheapest first, and with `--query`
the query's pairwise time bounds tightened by shortest paths (`bounds`, docs/windows.md). A bad input
file exits with status 2 and a one-line message on stderr (cost-model.md, "The planning CLI").
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from streamjoin.jsoncheck import json_object
from streamjoin.planner.cost import CostModel
from streamjoin.planner.exhaustive import MAX_EXHAUSTIVE, all_global_costs, names_of, optimal_global
from streamjoin.planner.planner import Planner
from streamjoin.planner.stats import StreamStats
from streamjoin.query import parse_definition
from streamjoin.query.bounds import bounds_report

__all__ = ["load_streams", "plan_report", "register"]

_FIELDS = frozenset({"name", "rate", "window", "rows", "distinct", "buckets"})


class StreamsError(ValueError):
    """A STREAMS.json file that cannot be used."""


def _number(spec: dict[str, Any], key: str, where: str, *, low: float, strict: bool) -> float:
    value = spec.get(key)
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if number and isinstance(value, int | float) and (value > low or (value == low and not strict)):
        return float(value)
    raise StreamsError(f"{where}.{key}: must be a number {'>' if strict else '>='} {low:g}")


def load_streams(text: str) -> dict[str, StreamStats]:
    """Parse STREAMS.json text into per-stream statistics, in file order."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StreamsError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("streams"), list):
        raise StreamsError('expected an object {"streams": [...]}')
    items = raw["streams"]
    if len(items) < 2:
        raise StreamsError("streams: need at least 2 streams to join")
    out: dict[str, StreamStats] = {}
    for i, item in enumerate(items):
        where = f"streams[{i}]"
        spec = json_object(item, where, _FIELDS, StreamsError)
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise StreamsError(f"{where}.name: must be a non-empty string")
        if name in out:
            raise StreamsError(f"{where}.name: duplicate stream {name!r}")
        if ("window" in spec) == ("rows" in spec):
            raise StreamsError(f'{where}: give exactly one of "window" (time) or "rows" (records)')
        rows = spec.get("rows")
        if "rows" in spec and (isinstance(rows, bool) or not isinstance(rows, int) or rows <= 0):
            raise StreamsError(f"{where}.rows: must be an integer > 0")
        out[name] = StreamStats(
            name=name,
            rate=_number(spec, "rate", where, low=0, strict=False),
            window=_number(spec, "window", where, low=0, strict=True) if "window" in spec else None,
            rows=rows if isinstance(rows, int) else None,
            distinct=_number(spec, "distinct", where, low=1, strict=False),
            buckets=_number(spec, "buckets", where, low=1, strict=False) if "buckets" in spec else 1.0,
        )
    return out


def plan_report(stats: dict[str, StreamStats], *, all_plans: bool = False) -> dict[str, Any]:
    """Return the JSON report of cost-model.md for eager evaluation of `stats`."""
    model = CostModel.build(stats)
    chosen = Planner().plan_model(model).global_order
    chosen_cost = model.global_cost(chosen)
    report: dict[str, Any] = {"chosen": list(chosen), "chosen_cost": float(chosen_cost)}
    if len(model.names) <= MAX_EXHAUSTIVE:
        best, best_cost = optimal_global(model, upper=chosen_cost)
        report |= {"optimal": list(names_of(model, best)), "optimal_cost": float(best_cost)}
    else:
        report |= {"optimal": None, "optimal_cost": None}
    if all_plans:
        if len(model.names) > MAX_EXHAUSTIVE:
            raise StreamsError(f"--all lists every order, at most {MAX_EXHAUSTIVE} streams")
        every = all_global_costs(model)
        report["plans"] = [{"order": list(names_of(model, o)), "cost": float(c)} for o, c in every]
    return report


_STREAMS_HELP = 'STREAMS.json: {"streams": [{"name", "rate", "window", "distinct", "buckets"?}, ...]}'
_ALL_HELP = "Also list every global order with its cost, cheapest first."
_QUERY_HELP = "A query JSON: also show its pairwise time bounds, tightened by shortest paths."


def plan(
    streams: Annotated[Path, typer.Argument(help=_STREAMS_HELP)],
    all_plans: Annotated[bool, typer.Option("--all", help=_ALL_HELP)] = False,
    query: Annotated[Path | None, typer.Option("--query", help=_QUERY_HELP)] = None,
) -> None:
    """Print the chosen and the optimal global join order for the given stream statistics."""
    try:
        text = streams.read_text(encoding="utf-8")
        report = plan_report(load_streams(text), all_plans=all_plans)
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"streamjoin plan: cannot read {streams}: {exc}", err=True)
        raise typer.Exit(2) from None
    except ValueError as exc:  # StreamsError, or a StreamStats check
        typer.echo(f"streamjoin plan: {streams}: {exc}", err=True)
        raise typer.Exit(2) from None
    if query is not None:
        report["bounds"] = _bounds(query)
    typer.echo(json.dumps(report))


def _bounds(path: Path) -> list[dict[str, Any]]:
    """Return the query's tightened pair bounds, or exit 2 with one line naming the problem."""
    try:
        return bounds_report(parse_definition(json.loads(path.read_text(encoding="utf-8"))))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        typer.echo(f"streamjoin plan: cannot read query {path}: {exc}", err=True)
    except ValueError as exc:  # QueryError
        typer.echo(f"streamjoin plan: {path}: bad query: {exc}", err=True)
    raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add the `plan` sub-command to `app`."""
    app.command("plan")(plan)
