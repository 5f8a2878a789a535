"""Summaries of the peer benchmark's runs: per workload and system, best and range, ratios to
`streamjoin replay`, the markdown table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Run", "markdown", "range_text", "summarise"]


@dataclass(frozen=True)
class Run:
    """One measured run."""

    workload: str
    records: int
    system: str
    round: int
    results: int
    wall_s: float
    cpu_s: float
    peak_rss_kb: int


def summarise(runs: Sequence[Run], reference: str = "replay") -> list[dict[str, Any]]:
    """Return one row per (workload, system): min/max wall and CPU, rates, peak RSS, ratios."""
    rows: list[dict[str, Any]] = []
    keys = list(dict.fromkeys((r.workload, r.system) for r in runs))
    for workload, system in keys:
        mine = [r for r in runs if (r.workload, r.system) == (workload, system)]
        walls, cpus = sorted(r.wall_s for r in mine), sorted(r.cpu_s for r in mine)
        rows.append(
            {
                "workload": workload,
                "system": system,
                "records": mine[0].records,
                "results": mine[0].results,
                "runs": len(mine),
                "wall_s": [round(walls[0], 2), round(walls[-1], 2)],
                "cpu_s": [round(cpus[0], 2), round(cpus[-1], 2)],
                "records_per_s": round(mine[0].records / walls[0]),
                "records_per_cpu_s": round(mine[0].records / cpus[0]),
                "peak_rss_mib": round(max(r.peak_rss_kb for r in mine) / 1024),
            }
        )
    best = {(r["workload"], r["system"]): r for r in rows}
    for row in rows:
        ref = best.get((row["workload"], reference))
        if ref is not None:
            row["cpu_vs_replay"] = round(row["cpu_s"][0] / ref["cpu_s"][0], 2)
            row["wall_vs_replay"] = round(row["wall_s"][0] / ref["wall_s"][0], 2)
    return rows


def range_text(pair: Sequence[float]) -> str:
    """Return `low-high` of a [low, high] pair (one number when they agree at one decimal)."""
    low, high = f"{pair[0]:.1f}", f"{pair[1]:.1f}"
    return low if low == high else f"{low}-{high}"


def markdown(rows: Sequence[dict[str, Any]], labels: dict[str, str]) -> str:
    """Return the summary as a markdown table."""
    head = (
        "| workload | records | results | system | CPU s | wall s | records/CPU-s | records/s (wall) "
        "| peak RSS MiB | CPU / replay | wall / replay |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r['workload']} | {r['records']:,} | {r['results']:,} | {labels.get(r['system'], r['system'])} "
        f"| {range_text(r['cpu_s'])} | {range_text(r['wall_s'])} | {r['records_per_cpu_s']:,} "
        f"| {r['records_per_s']:,} "
        f"| {r['peak_rss_mib']:,} | {r.get('cpu_vs_replay', '')} | {r.get('wall_vs_replay', '')} |\n"
        for r in rows
    )
    return head + body
